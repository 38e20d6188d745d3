import * as ex from './examples.js';
import { codesOfStatus } from '../plugins/errors.plugin.js';
import { ERROR_SHAPED_REFS } from './components.js';

/*
 * What the route schemas cannot say: a description of every response, its headers, and examples
 * of every request and response body. Applied to the generated document (transformObject).
 */

interface Example {
  summary?: string;
  value: unknown;
}
type Examples = Record<string, Example>;

interface ResponseDoc {
  description?: string;
  examples?: Examples;
}

interface OperationDoc {
  request?: Examples;
  responses: Record<string, ResponseDoc>;
}

interface MediaObject {
  schema?: unknown;
  example?: unknown;
  examples?: Examples;
}
interface ResponseObject {
  description?: string;
  headers?: Record<string, unknown>;
  content?: Record<string, MediaObject>;
}
interface OperationObject {
  security?: unknown[];
  requestBody?: { content?: Record<string, MediaObject> };
  responses?: Record<string, ResponseObject>;
}
export interface OpenApiObject {
  paths?: Record<string, Record<string, OperationObject>>;
  components?: Record<string, unknown>;
}

const one = (value: unknown, summary?: string): Examples => ({ default: summary ? { summary, value } : { value } });

const DEFAULT_RESPONSES: Record<string, Required<ResponseDoc>> = {
  400: {
    description: 'The request is invalid (body, query, path parameter or header); `message` has one entry per violation. Nothing was done.',
    examples: one(ex.errors[400]),
  },
  401: { description: 'Missing, unknown, expired or other-environment API key (`X-API-Key`).', examples: one(ex.errors[401]) },
  403: { description: 'The partner account is inactive.', examples: one(ex.errors[403]) },
  404: { description: 'Not found, or not this partner’s.', examples: one(ex.errors[404]) },
  409: { description: 'Conflict with the current state.', examples: one(ex.errors[409]) },
  413: { description: 'The request body is larger than the limit (`BODY_LIMIT_BYTES`, 64 KiB by default).', examples: one(ex.errors[413]) },
  415: { description: 'The body is not JSON: send `Content-Type: application/json`.', examples: one(ex.errors[415]) },
  422: { description: 'The request is well-formed but cannot be processed.', examples: one(ex.errors[422]) },
  429: {
    description:
      'Rate limit of this key exceeded, or (message `Too many failed authentications from this address`) too many `401`s from this client address in the last minute: retry after `Retry-After` seconds. Refused before anything was read or done, so retrying is always safe.',
    examples: one(ex.errors[429]),
  },
  500: { description: 'Unexpected error; quote the `X-Request-Id` when reporting it.', examples: one(ex.errors[500]) },
  503: {
    description:
      'Temporarily unavailable: a ministry system is unreachable (or its circuit is open), the database is (a restart or failover; with `Retry-After`), or the rate limiter is (then with `Retry-After`). Nothing half-done stays behind: retry later, with the same `X-Idempotency-Key` for a payment.',
    examples: {
      ministry: { summary: 'A ministry system is unreachable', value: ex.errors[503] },
      database: { summary: 'The database is away (with Retry-After)', value: { ...ex.errors[503], code: 'service_unavailable', message: 'Service temporarily unavailable; retry later' } },
    },
  },
};

const paymentNotFound = { description: 'No payment with this id for this partner.', examples: one(ex.notFound('Payment')) };
const invoiceNotFound = { description: 'No invoice with this id for this partner (it must have been retrieved by this partner first).', examples: one(ex.notFound('Invoice')) };
const caseNotFound = { description: 'No case with this id for this partner.', examples: one(ex.notFound('Case')) };
const webhookNotFound = { description: 'No webhook with this id for this partner (or it was deleted).', examples: one(ex.notFound('Webhook')) };

/** Keyed by `method path`, the path as in the document (relative to the servers). */
const OPERATIONS: Record<string, OperationDoc> = {
  'get /invoices': {
    responses: {
      200: { description: 'The invoices found in every ministry system for the filter (possibly none).', examples: one(ex.invoiceList) },
      400: { examples: one(ex.badRequest(['', 'exactly one of ttd, vehicle or taxRef must be given'])) },
    },
  },
  'get /invoices/ref/{refNum}': {
    responses: {
      200: { description: 'The invoice, as its ministry system holds it now; it is recorded as retrieved by this partner.', examples: one(ex.invoice) },
      404: { description: 'No ministry system knows this reference number.', examples: one(ex.notFound('Invoice')) },
    },
  },
  'get /invoices/{id}': {
    responses: { 200: { description: 'The stored copy of the invoice.', examples: one(ex.invoice) }, 404: invoiceNotFound },
  },
  'get /invoices/{id}/refresh': {
    responses: { 200: { description: 'The invoice as its ministry system holds it now (the stored copy is updated).', examples: one(ex.invoice) }, 404: invoiceNotFound },
  },
  'post /payments': {
    request: {
      full: { summary: 'Pay the full amount', value: { invoiceId: ex.EXAMPLE_IDS.INVOICE_ID } },
      partial: { summary: 'Pay part of the amount', value: { invoiceId: ex.EXAMPLE_IDS.INVOICE_ID, amount: 5000 } },
    },
    responses: {
      201: {
        description:
          'The payment is `submitted` to the ministry system: show `qrpay` (QR, bank deeplinks, short link) to the payer. ' +
          'A replay of the same `X-Idempotency-Key` returns the first answer with `message: "idempotent"` and `Idempotent-Replayed: true`.',
        examples: { created: { summary: 'Submitted', value: ex.paymentCreated }, replayed: { summary: 'Idempotent replay', value: ex.paymentReplayed } },
      },
      404: invoiceNotFound,
      409: { description: 'A request with this `X-Idempotency-Key` is still in progress; retry shortly.', examples: one(ex.errors[409]) },
      422: {
        description:
          'The ministry system refused the payment, or the invoice is not payable (paid, another payment in progress) (`PaymentFailed`); ' +
          'or the `X-Idempotency-Key` was already used with a different request, another `X-Partner-Reference` included (`Error`).',
        examples: {
          rejected: { summary: 'Refused by the ministry system', value: ex.refusal('MOF-T-REJECT', 'ministry_rejected', 'not accepted at this time') },
          inProgress: { summary: 'Another payment is in progress', value: ex.refusal('MOF-T-1', 'invoice_not_payable', 'Another payment for this invoice is in progress') },
          amount: { summary: 'The amount is not accepted', value: ex.refusal('MOF-T-1', 'amount_not_accepted', 'Amount does not match the invoice balance') },
          idempotencyMismatch: { summary: 'Key reused with another request', value: ex.errors[422] },
        },
      },
    },
  },
  'get /payments/{id}': {
    responses: {
      200: {
        description: 'The payment, after a live check with its ministry system; `paidAt` once `confirmed`.',
        examples: { submitted: { value: ex.payment }, confirmed: { value: ex.paymentConfirmed } },
      },
      404: paymentNotFound,
    },
  },
  'delete /payments/{id}': {
    responses: {
      200: { description: 'Canceled at the ministry system and here; its invoices are payable again.', examples: one({ id: ex.EXAMPLE_IDS.PAYMENT_ID, canceled: true }) },
      404: paymentNotFound,
      409: {
        description: 'The payment cannot be canceled in its status (only `submitted` or `confirmed` can).',
        examples: one(ex.conflict('illegal_transition', 'Payment cannot be canceled in status canceled')),
      },
    },
  },
  'post /payments/report': {
    request: one({ financeDay: '2026-11-25' }),
    responses: {
      200: { description: "This partner's entries of that finance day in every ministry system's settlement; `success: false` when a system could not answer.", examples: one(ex.settlement) },
    },
  },
  'get /reports/summary': { responses: { 200: { description: 'Counts and amount due.', examples: one(ex.summary) } } },
  'get /reports/payments': { responses: { 200: { description: 'One page of payments, newest first.', examples: one(ex.paymentList) } } },
  'post /webhooks': {
    request: one(ex.createWebhook),
    responses: {
      201: { description: 'Registered; the only response that shows the secret.', examples: one({ ...ex.webhook, secret: ex.createWebhook.secret }) },
      400: { examples: one(ex.badRequest(['/url', 'url must use https'])) },
      409: {
        description: 'The partner already has the most webhooks allowed (`WEBHOOK_MAX_PER_PARTNER`); delete one first.',
        examples: one(ex.conflict('webhook_limit_reached', 'A partner may have at most 10 webhooks; delete one (DELETE /api/v1/webhooks/{id}) before registering another')),
      },
    },
  },
  'get /webhooks': { responses: { 200: { description: "This partner's webhooks, without their secrets.", examples: one([ex.webhook]) } } },
  'delete /webhooks/{id}': {
    responses: { 200: { description: 'Deleted; its deliveries not yet sent are dropped.', examples: one({ id: ex.EXAMPLE_IDS.WEBHOOK_ID, deleted: true }) }, 404: webhookNotFound },
  },
  'get /webhooks/{id}': {
    responses: { 200: { description: 'The webhook, without its secret.', examples: { enabled: { value: ex.webhook }, failing: { summary: 'Disabled by the service', value: ex.disabledWebhook } } }, 404: webhookNotFound },
  },
  'patch /webhooks/{id}': {
    request: { enable: { summary: 'Enable it again', value: { enabled: true } }, edit: { summary: 'Move it', value: { url: ex.createWebhook.url, events: ['payment.confirmed'] } } },
    responses: {
      200: { description: 'The webhook as changed; with `enabled: true`, its deliveries waiting for a retry are made due and go at once.', examples: one(ex.webhook) },
      400: { examples: one(ex.badRequest(['/secret', 'property secret should not exist'])) },
      404: webhookNotFound,
    },
  },
  'post /webhooks/{id}/rotate-secret': {
    request: { generated: { summary: 'A generated secret', value: {} }, chosen: { summary: 'Your own', value: { secret: 'whsec_fedcba9876543210' } } },
    responses: {
      200: {
        description:
          'The new secret, shown only here. From the next attempt `X-Service-Signature` is the new secret\'s, and `webhook-signature` carries a signature of each until `previousSecretExpiresAt`. To rotate without a refused delivery, choose the new secret yourself: add it to the secrets your receiver accepts (the SDK\'s verifiers take a list), rotate with `{ "secret": "<it>" }`, and drop the old one after `previousSecretExpiresAt`.',
        examples: one({ id: ex.EXAMPLE_IDS.WEBHOOK_ID, secret: 'whsec_Zq3kV0cQ8bLwT1yX5nR7pA2sD4fG6hJ9kL0mN1oP2qQ=', previousSecretExpiresAt: '2026-11-26T08:58:54.531Z' }),
      },
      404: webhookNotFound,
    },
  },
  'post /webhooks/{id}/recover': {
    request: one({ since: '2026-11-25T00:00:00.000Z' }),
    responses: {
      202: {
        description:
          'The missed events are sent now: missing, failed and canceled deliveries queued, those waiting for a retry made due; each once, however often this is called. Done in batches of `WEBHOOK_RECOVER_BATCH` before this answer.',
        examples: one({ queued: 3 }),
      },
      400: {
        description: 'The request is invalid, or `since` reaches back further than the events are kept (`EVENT_RETENTION_MS`). Nothing was queued.',
        examples: one(ex.badRequest(['/since', 'since must be within the event retention of 90 days (EVENT_RETENTION_MS)'])),
      },
      404: webhookNotFound,
    },
  },
  'get /webhooks/{id}/deliveries': {
    responses: { 200: { description: 'Delivery attempts and pending deliveries of the webhook, newest first.', examples: one(ex.deliveryList) }, 404: webhookNotFound },
  },
  'post /webhooks/{id}/test': {
    responses: {
      202: { description: 'A signed `webhook.test` delivery is queued, due now.', examples: one({ deliveryId: ex.EXAMPLE_IDS.DELIVERY_ID, event: 'webhook.test' }) },
      404: webhookNotFound,
    },
  },
  'post /webhooks/{id}/deliveries/{deliveryId}/redeliver': {
    responses: {
      202: { description: 'One more attempt of the delivery is queued, due now.', examples: one({ deliveryId: ex.EXAMPLE_IDS.DELIVERY_ID, status: 'pending' }) },
      404: { description: 'No such webhook, or no such delivery of it, for this partner.', examples: one(ex.notFound('Delivery')) },
    },
  },
  'get /events': {
    responses: {
      200: {
        description:
          'One page of this partner\'s events, newest first; `nextCursor` is null on the last page. With `afterSequence`, the events after that position, oldest first (the feed to poll; `nextCursor` is null, read on from the last `sequence`).',
        examples: { newest: { summary: 'Newest first', value: ex.eventList }, feed: { summary: 'With afterSequence=48180', value: ex.eventFeed } },
      },
    },
  },
  'get /events/{id}': {
    responses: {
      200: { description: 'The event; `data` is exactly what its webhook deliveries carry.', examples: one(ex.event) },
      404: { description: 'No event with this id for this partner (or it is past its retention).', examples: one(ex.notFound('Event')) },
    },
  },
  'post /cases': {
    request: {
      paidNotUpdated: { summary: 'Paid, and the ministry still shows the invoice unpaid', value: { paymentId: ex.EXAMPLE_IDS.PAYMENT_ID, type: 'paid_not_updated', description: ex.openedCase.description } },
      wrongAmount: { summary: 'Charged another amount', value: { paymentId: ex.EXAMPLE_IDS.PAYMENT_ID, type: 'wrong_amount', description: 'Charged 12 000 instead of 10 000' } },
    },
    responses: {
      201: {
        description:
          'The case is `open`, due to be answered by `dueAt` (`CASE_TURNAROUND_HOURS` for its type: 24 hours for `paid_not_updated`, 120 for the others by default); a `case.opened` event. ' +
          'Within seconds the service gathers the evidence (the payment\'s timeline, a fresh status answer from the ministry, the invoice as the ministry shows it, the settlement and reconciliation of its day): ' +
          'a `paid_not_updated` case whose payment the ministry confirms is answered at once (`resolution.by: "service"`, outcome `confirmed`, a `case.resolved` event) and the payment becomes `confirmed` (with `payment.confirmed`). ' +
          'Any other case goes to the operator; follow it with `GET /cases/{id}` or the `case.*` events.',
        examples: one(ex.openedCase),
      },
      400: {
        examples: {
          unknownField: { summary: 'A field the request does not take', value: ex.badRequest(['/extra', 'property extra should not exist']) },
          type: { summary: 'Not one of the case types', value: ex.badRequest(['/type', 'type must be one of: paid_not_updated, paid_twice, wrong_amount, canceled_not_reversed, other']) },
        },
      },
      404: paymentNotFound,
      409: {
        description:
          'The payment already has an unresolved case of this type: `caseId` names it. Add what you know to it (`POST /cases/{id}/comments`); once it is resolved, a new case of this type may be opened.',
        examples: one({ ...ex.conflict('case_already_open', 'This payment already has an open case of this type'), caseId: ex.EXAMPLE_IDS.CASE_ID }),
      },
    },
  },
  'get /cases': {
    responses: {
      200: {
        description: 'One page of your cases, newest first, without their comments (`GET /cases/{id}` shows them); `nextCursor` is null on the last page.',
        examples: { page: { summary: 'A page with another after it', value: ex.caseList }, none: { summary: 'Nothing matches', value: { items: [], nextCursor: null } } },
      },
      400: {
        description: 'The request is invalid; or `cursor` is not a `nextCursor` this list gave you (another partner\'s). Nothing was done.',
        examples: {
          status: { summary: 'Not one of the statuses', value: ex.badRequest(['/status', 'status must be one of: open, in_progress, escalated, resolved']) },
          cursor: { summary: 'A cursor of another list', value: ex.badRequest(['/cursor', 'cursor must be the nextCursor of a previous page']) },
        },
      },
    },
  },
  'get /cases/{id}': {
    responses: {
      200: {
        description: 'The case with its comments, yours and the operator\'s, oldest first; `resolution` once it is `resolved`. Each `case.*` event carries exactly this.',
        examples: {
          open: { summary: 'Open, with your note', value: ex.commentedCase },
          service: { summary: 'Answered by the service: the ministry confirms the payment', value: ex.resolvedCase },
          operator: { summary: 'Answered by the operator', value: ex.operatorResolvedCase },
        },
      },
      400: { examples: one(ex.badRequest(['/id', 'id must be a UUID'])) },
      404: caseNotFound,
    },
  },
  'post /cases/{id}/comments': {
    request: one({ text: 'Receipt number 000417 attached by the customer' }),
    responses: {
      201: { description: 'The case as `GET /cases/{id}` shows it, your note last; a `case.updated` event.', examples: one(ex.commentedCase) },
      400: { examples: one(ex.badRequest(['/text', 'text must NOT have fewer than 1 characters'])) },
      404: caseNotFound,
      409: { description: 'The case is resolved: open a new one (`POST /cases`) if the matter is not settled.', examples: one(ex.conflict('conflict', 'The case is resolved; open a new one')) },
    },
  },
  'post /devices': {
    request: one({ userId: 'user-42', fcmToken: 'fcm-token-abc', platform: 'android' }),
    responses: {
      200: { description: 'The device was already registered (its token is updated).', examples: one(ex.device) },
      201: {
        description:
          "The device is registered. A payment made with `X-User-Id` set to its `userId` pushes to it once confirmed, through Firebase Cloud Messaging HTTP v1 with access tokens the service mints and renews from the operator's service account key. Where the operator has configured no FCM credentials (local, usually the sandbox) the push is recorded `skipped` and nothing is sent.",
        examples: one(ex.device),
      },
    },
  },
  'post /sandbox/approve': {
    request: one({ paymentId: ex.EXAMPLE_IDS.PAYMENT_ID }),
    responses: {
      200: { description: 'Approved in the simulated ministry system; the payment becomes `confirmed` on the next `GET /payments/{id}`.', examples: one({ id: ex.EXAMPLE_IDS.PAYMENT_ID, approved: true }) },
      404: paymentNotFound,
      409: { description: 'The payment is not `submitted`.', examples: one(ex.conflict('conflict', 'Only a submitted payment can be approved; this one is confirmed')) },
    },
  },
  'get /sandbox/scenarios': {
    responses: { 200: { description: 'Every scenario `POST /sandbox/invoices` takes, with what it does.', examples: one(ex.sandboxScenarios) } },
  },
  'post /sandbox/invoices': {
    request: {
      failAfterSubmit: { summary: 'A payment the ministry fails after accepting it', value: { scenario: 'fail-after-submit' } },
      approveLater: { summary: 'Approved 10 s after the payment, with no call from you', value: { scenario: 'approve-later', delaySeconds: 10 } },
      partial: { summary: 'An invoice that takes part-payments', value: { scenario: 'partial', amount: 25000.5 } },
    },
    responses: {
      201: { description: 'Planted at the simulated ministry, yours alone; pay it with `POST /payments`.', examples: one(ex.sandboxInvoice) },
    },
  },
  'get /health/live': { responses: { 200: { description: 'The process is up.', examples: one({ status: 'ok', timestamp: '2026-11-25T08:58:54.627Z' }) } } },
  'get /health/ready': {
    responses: {
      200: { description: 'The database answers.', examples: one({ status: 'ok', db: 'ok', timestamp: '2026-11-25T08:58:54.632Z' }) },
      503: { description: 'The database does not answer (`status: unavailable`), or the instance is shutting down (`status: draining`; a load balancer sends its requests elsewhere).', examples: one({ status: 'unavailable', db: 'down', timestamp: '2026-11-25T08:58:54.632Z', code: 'service_unavailable', requestId: ex.REQUEST_ID }) },
    },
  },
};

const header = (description: string, schema: object, example: string, required = false) => ({ description, required, schema, example });

/** components.headers */
export const HEADER_COMPONENTS = {
  XRequestId: header(
    'The request id: the `X-Request-Id` the caller sent when it is 1 to 128 of `A-Z a-z 0-9 . _ : -`, otherwise a new UUID. Quote it when reporting a problem.',
    { type: 'string' },
    '523c5e5a-6e01-42b1-a758-db0e02f3900d',
    true,
  ),
  RateLimit: header(
    'Remaining quota of this key per window (draft-ietf-httpapi-ratelimit-headers): `r` requests left, `t` seconds until the window frees one.',
    { type: 'string' },
    '"per-second";r=4;t=1, "per-minute";r=59;t=60, "per-hour";r=999;t=3600',
  ),
  RateLimitPolicy: header(
    "The quota policies of this key: `q` requests per `w` seconds; the partner's own limits when the operator set them, otherwise the service's defaults.",
    { type: 'string' },
    '"per-second";q=5;w=1, "per-minute";q=60;w=60, "per-hour";q=1000;w=3600',
  ),
  RetryAfter: header('Seconds to wait before retrying.', { type: 'string', pattern: '^[0-9]+$' }, '1', true),
  IdempotentReplayed: header(
    '`true` when this is the stored answer to an earlier request with the same `X-Idempotency-Key` (nothing was done again).',
    { type: 'string', enum: ['true'] },
    'true',
  ),
  XStatusSource: header(
    "Where the status came from: `live`, a ministry status answer given after this request arrived (or a final state such an answer reached); `stored`, the service's books (a payment already final, or no live answer in time: no ministry slot free within `CONFIRM_LIVE_WAIT_MS`, the ministry's circuit open, the check failed or passed the ministry's deadline).",
    { type: 'string', enum: ['live', 'stored'] },
    'live',
    true,
  ),
};

const headerRef = (name: keyof typeof HEADER_COMPONENTS) => ({ $ref: `#/components/headers/${name}` });

function responseHeaders(key: string, status: string, secured: boolean): Record<string, unknown> {
  const headers: Record<string, unknown> = { 'X-Request-Id': headerRef('XRequestId') };
  // The rate limiter runs once the key is known: not on a 401, nor on its own 503.
  if (secured && status !== '401') {
    headers.RateLimit = headerRef('RateLimit');
    headers['RateLimit-Policy'] = headerRef('RateLimitPolicy');
  }
  if (status === '429') headers['Retry-After'] = headerRef('RetryAfter');
  if (status === '503' && secured) {
    headers['Retry-After'] = { ...HEADER_COMPONENTS.RetryAfter, required: false, description: 'Present when the database or the rate limiter is unavailable: seconds to wait.' };
  }
  if (key === 'post /payments' && (status === '201' || status === '422')) headers['Idempotent-Replayed'] = headerRef('IdempotentReplayed');
  if (key === 'get /payments/{id}' && status === '200') headers['X-Status-Source'] = headerRef('XStatusSource');
  return headers;
}

/** Descriptions, headers and examples of every operation and response of `doc`, in place. */
export function describeOperations(doc: OpenApiObject): void {
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(item)) {
      const key = `${method} ${path}`;
      const spec = OPERATIONS[key];
      const secured = !(Array.isArray(op.security) && op.security.length === 0);
      const requestMedia = op.requestBody?.content?.['application/json'];
      if (requestMedia && spec?.request) requestMedia.examples = spec.request;
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        const own = spec?.responses[status];
        const fallback = DEFAULT_RESPONSES[status];
        const description = own?.description ?? fallback?.description;
        if (description) response.description = description;
        response.headers = { ...response.headers, ...responseHeaders(key, status, secured) };
        const media = response.content?.['application/json'];
        const examples = own?.examples ?? fallback?.examples;
        if (media && examples) {
          delete media.example;
          media.examples = examples;
        }
        if (media && Number(status) >= 400) media.schema = withStatusCodes(media.schema, Number(status));
      }
    }
  }
}

/**
 * An error response's schema naming the codes of its own status: the `Error` component (and
 * `CaseConflict`, the error shape with a `caseId`) lists every code of the closed list
 * (docs/errors.md); each response narrows `code` to its status's.
 */
function withStatusCodes(schema: unknown, status: number): unknown {
  if (schema === null || typeof schema !== 'object') return schema;
  const { $ref, anyOf } = schema as { $ref?: unknown; anyOf?: unknown };
  if (Array.isArray(anyOf)) return { ...schema, anyOf: anyOf.map((branch) => withStatusCodes(branch, status)) };
  const codes = codesOfStatus(status);
  if (typeof $ref !== 'string' || !ERROR_SHAPED_REFS.has($ref) || codes.length === 0) return schema;
  return { allOf: [{ $ref }], properties: { code: { type: 'string', enum: codes } } };
}
