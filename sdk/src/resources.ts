import { randomUUID } from 'node:crypto';
import type { PaymentChannelClient } from './client.js';
import type { SendRequest } from './transport.js';
import type {
  CreatePaymentInput,
  CreateSandboxInvoiceInput,
  Device,
  EventList,
  EventQuery,
  FollowEventsOptions,
  HealthLive,
  HealthReady,
  Invoice,
  InvoiceList,
  Payment,
  PaymentCanceled,
  PaymentCreated,
  PaymentEvent,
  PaymentList,
  SandboxApproval,
  SandboxScenarioList,
  SettlementReport,
  Summary,
} from './types.js';

const id = (value: string) => encodeURIComponent(value);

/** Waits `ms`; false when `signal` aborted first (or already had). */
function pause(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export function invoicesResource(request: SendRequest): Pick<PaymentChannelClient, 'invoices'> {
  return {
    invoices: {
      search: (filter) =>
        request<InvoiceList>({ method: 'GET', path: '/invoices', query: { ttd: filter.ttd, vehicle: filter.vehicle, taxRef: filter.taxRef }, idempotent: true }),
      byRef: (refNum) => request<Invoice>({ method: 'GET', path: `/invoices/ref/${id(refNum)}`, idempotent: true }),
      get: (invoiceId) => request<Invoice>({ method: 'GET', path: `/invoices/${id(invoiceId)}`, idempotent: true }),
      refresh: (invoiceId) => request<Invoice>({ method: 'GET', path: `/invoices/${id(invoiceId)}/refresh`, idempotent: true }),
    },
  };
}

export function paymentsResource(request: SendRequest): Pick<PaymentChannelClient, 'payments'> {
  return {
    payments: {
      create: (input, opts = {}) => {
        // One key per logical call, generated before the first attempt and reused by every retry.
        const idempotencyKey = opts.idempotencyKey ?? randomUUID();
        const body: CreatePaymentInput = { invoiceId: input.invoiceId };
        if (input.amount !== undefined) body.amount = input.amount;
        return request<PaymentCreated>({
          method: 'POST',
          path: '/payments',
          body,
          headers: {
            'x-idempotency-key': idempotencyKey,
            ...(opts.userId === undefined ? {} : { 'x-user-id': opts.userId }),
            ...(opts.partnerReference === undefined ? {} : { 'x-partner-reference': opts.partnerReference }),
          },
          idempotent: true,
          signal: opts.signal,
        });
      },
      get: (paymentId) => request<Payment>({ method: 'GET', path: `/payments/${id(paymentId)}`, idempotent: true }),
      cancel: (paymentId) => request<PaymentCanceled>({ method: 'DELETE', path: `/payments/${id(paymentId)}`, idempotent: true }),
      settlement: (financeDay) => request<SettlementReport>({ method: 'POST', path: '/payments/report', body: { financeDay }, idempotent: true }),
    },
  };
}

export function reportsResource(request: SendRequest): Pick<PaymentChannelClient, 'reports'> {
  return {
    reports: {
      summary: () => request<Summary>({ method: 'GET', path: '/reports/summary', idempotent: true }),
      payments: (query = {}) =>
        request<PaymentList>({ method: 'GET', path: '/reports/payments', query: { page: query.page, limit: query.limit }, idempotent: true }),
    },
  };
}

export function eventsResource(request: SendRequest): Pick<PaymentChannelClient, 'events'> {
  const listEvents = (query: EventQuery = {}) =>
    request<EventList>({
      method: 'GET',
      path: '/events',
      query: { type: query.type, paymentId: query.paymentId, from: query.from, to: query.to, cursor: query.cursor, afterSequence: query.afterSequence, limit: query.limit },
      idempotent: true,
    });

  async function* iterateEvents(query: Omit<EventQuery, 'cursor'> = {}): AsyncIterableIterator<PaymentEvent> {
    let cursor: string | undefined;
    do {
      const page = await listEvents({ ...query, cursor });
      yield* page.items;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }

  async function* followEvents(options: FollowEventsOptions): AsyncIterableIterator<PaymentEvent> {
    const { type, signal } = options;
    const pollIntervalMs = Math.max(0, options.pollIntervalMs ?? 1000);
    const limit = options.limit ?? 100;
    let after = options.afterSequence;
    while (!signal?.aborted) {
      let page: EventList;
      try {
        page = await request<EventList>({ method: 'GET', path: '/events', query: { afterSequence: after, type, limit }, idempotent: true, signal });
      } catch (err) {
        if (signal?.aborted) return;
        throw err;
      }
      for (const event of page.items) {
        if (signal?.aborted) return;
        // The service never returns these twice; the check keeps "each once" whatever a proxy replays.
        if (event.sequence <= after) continue;
        after = event.sequence;
        yield event;
      }
      // A full page means more are waiting: ask again at once.
      if (page.items.length < limit && !(await pause(pollIntervalMs, signal))) return;
    }
  }

  return {
    events: {
      list: listEvents,
      iterate: iterateEvents,
      follow: followEvents,
      get: (eventId) => request<PaymentEvent>({ method: 'GET', path: `/events/${id(eventId)}`, idempotent: true }),
    },
  };
}

export function devicesResource(request: SendRequest): Pick<PaymentChannelClient, 'devices'> {
  return {
    devices: {
      register: (input) =>
        request<Device>({
          method: 'POST',
          path: '/devices',
          body: { userId: input.userId, fcmToken: input.fcmToken, platform: input.platform },
          idempotent: true,
        }),
    },
  };
}

export function healthResource(request: SendRequest): Pick<PaymentChannelClient, 'health'> {
  return {
    health: {
      live: () => request<HealthLive>({ method: 'GET', path: '/health/live', auth: false, idempotent: true }),
      ready: () => request<HealthReady>({ method: 'GET', path: '/health/ready', auth: false, idempotent: true, retry: false, acceptStatuses: [503] }),
    },
  };
}

export function sandboxResource(request: SendRequest): Pick<PaymentChannelClient, 'sandbox'> {
  return {
    sandbox: {
      scenarios: () => request<SandboxScenarioList>({ method: 'GET', path: '/sandbox/scenarios', idempotent: true }),
      createInvoice: (input: CreateSandboxInvoiceInput) => {
        const body: CreateSandboxInvoiceInput = { scenario: input.scenario };
        if (input.amount !== undefined) body.amount = input.amount;
        if (input.delaySeconds !== undefined) body.delaySeconds = input.delaySeconds;
        if (input.durationSeconds !== undefined) body.durationSeconds = input.durationSeconds;
        return request<Invoice>({ method: 'POST', path: '/sandbox/invoices', body, idempotent: false });
      },
      approve: (paymentId) => request<SandboxApproval>({ method: 'POST', path: '/sandbox/approve', body: { paymentId }, idempotent: false }),
    },
  };
}
