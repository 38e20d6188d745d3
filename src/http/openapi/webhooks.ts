import { WEBHOOK_TEST_EVENT, type DeliveredEvent, type WebhookEvent } from '../../domain/vocabulary.js';
import { EVENT_DATA } from '../../schemas/event.schema.js';
import { deliveryBody, deliveryHeaders } from '../../domain/webhook-message.js';
import { EXAMPLE_IDS, createWebhook, openedCase, resolvedCase } from './examples.js';

/*
 * The deliveries this service POSTs to a partner's webhook URL (src/domain/webhook-message.ts),
 * as the OpenAPI 3.1 `webhooks` section.
 */

const uuid = { type: 'string', format: 'uuid' };
const dateTime = { type: 'string', format: 'date-time' };

function eventSchema(event: string, description: string, data: object) {
  return {
    type: 'object',
    description,
    required: ['event', 'eventId', 'deliveryId', 'createdAt', 'data'],
    additionalProperties: false,
    properties: {
      event: { type: 'string', enum: [event] },
      eventId: {
        ...uuid,
        description: 'The event id, as `webhook-id` and in `GET /events/{id}`: the same in every delivery of this event, to each of your webhooks, on every retry and redelivery.',
      },
      deliveryId: { ...uuid, description: 'The delivery id, the same as `X-Service-Delivery`; the same on every retry of this delivery.' },
      createdAt: { ...dateTime, description: 'When the event happened (not when this attempt was sent).' },
      data,
    },
  };
}

/** An event's data schema as plain JSON Schema (the TypeBox schema without its own symbols). */
const dataOf = (event: WebhookEvent): object => JSON.parse(JSON.stringify(EVENT_DATA[event])) as object;

/** Added to components.schemas. */
export const WEBHOOK_COMPONENTS = {
  PaymentSubmittedEvent: eventSchema('payment.submitted', 'A payment reached `submitted` (normally along with the 201 of `POST /payments`).', dataOf('payment.submitted')),
  PaymentConfirmedEvent: eventSchema('payment.confirmed', 'A payment reached `confirmed`: the ministry system has the money.', dataOf('payment.confirmed')),
  PaymentFailedEvent: eventSchema(
    'payment.failed',
    'A submitted payment reached `failed`: the ministry system rejected it or has no record of it. Never sent for a payment refused with the 422 of `POST /payments`.',
    dataOf('payment.failed'),
  ),
  PaymentCanceledEvent: eventSchema(
    'payment.canceled',
    'A payment reached `canceled`; `reason` says who ended it: `partner` (your `DELETE /payments/{id}`), `ministry` (the ministry system), `expired` (still unpaid `PAYMENT_EXPIRY_MS` after submission).',
    dataOf('payment.canceled'),
  ),
  CaseOpenedEvent: eventSchema('case.opened', 'You opened a case (`POST /cases`); `data` is the case as `GET /cases/{id}` shows it. Opt-in: subscribe to it.', dataOf('case.opened')),
  CaseUpdatedEvent: eventSchema(
    'case.updated',
    'A case changed without being answered: you or the operator commented, the operator took it, or its `dueAt` passed (`status: escalated`); `data` is the case as `GET /cases/{id}` shows it. Opt-in.',
    dataOf('case.updated'),
  ),
  CaseResolvedEvent: eventSchema('case.resolved', 'A case was answered: `data.resolution` says how and by whom. Opt-in.', dataOf('case.resolved')),
  WebhookTestEvent: eventSchema(WEBHOOK_TEST_EVENT, 'A test delivery asked for with `POST /webhooks/{id}/test`; sent whatever events the webhook subscribed to.', {
    type: 'object',
    required: ['webhookId', 'message', 'sentAt'],
    additionalProperties: false,
    properties: { webhookId: uuid, message: { type: 'string', enum: ['test delivery'] }, sentAt: { ...dateTime, description: 'When the test was asked for' } },
  }),
};

const SIGNATURE = `Each delivery is signed twice, with the webhook's secret (returned by \`POST /webhooks\` and
\`POST /webhooks/{id}/rotate-secret\`):

- **Standard Webhooks** (recommended; replay-proof): \`webhook-signature\` is \`v1,\` and the base64
  HMAC-SHA256 of \`{webhook-id}.{webhook-timestamp}.{raw body}\`. Its key follows the Standard
  Webhooks specification: a secret that is \`whsec_\` followed by standard base64 (with padding)
  of 24 to 64 bytes is keyed with those decoded bytes, any other secret with its UTF-8 bytes.
  Generated secrets have that form. Recompute it, compare in constant time, and refuse a
  \`webhook-timestamp\` more than 5 minutes from your clock. During a secret rotation's grace
  period the header carries one space-separated \`v1,\` signature per valid secret: accept the
  delivery when any matches. The \`standardwebhooks\` npm package verifies it: \`new Webhook(secret)\`
  for a \`whsec_\` secret, \`new Webhook('whsec_' + base64(UTF-8 bytes of the secret))\` for another.
- \`X-Service-Signature\`: the lowercase hex HMAC-SHA256 of the exact body bytes, keyed with the
  UTF-8 bytes of the current secret (whatever its form). It covers the body only, so it cannot
  tell a replay from a retry. After a rotation it is the new secret's at once: to rotate without a
  refused delivery, have your receiver accept the new secret beside the old one before you rotate
  with \`{ "secret": "<the new one>" }\`, and drop the old one after the grace period.

Compute either over the raw bytes **before** any JSON parsing (re-serialised JSON will not match).
Retries carry the byte-identical body and the same \`webhook-id\` (the event id), and arrive up to
about 28 hours after the event; deduplicate by \`webhook-id\`.

Answer any \`2xx\` within 5 seconds; anything else (another status, a timeout, a refused connection)
is retried on the schedule (by default immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h).
Delivery is at least once.`;

const header = (description: string, schema: object, example: string) => ({ description, required: true, schema, example });

const CREATED_AT = '2026-11-25T08:58:54.108Z';
const SENT_AT = new Date('2026-11-25T08:58:54.000Z');

function delivery(event: DeliveredEvent, component: keyof typeof WEBHOOK_COMPONENTS, summary: string, data: Record<string, unknown>) {
  const example = { event, eventId: EXAMPLE_IDS.EVENT_ID, deliveryId: EXAMPLE_IDS.DELIVERY_ID, createdAt: CREATED_AT, data };
  // The real signatures of the example body with the example secret of POST /webhooks, sent at SENT_AT.
  const message = { ...example, createdAt: new Date(CREATED_AT) };
  const signed = deliveryHeaders(message, deliveryBody(message), [createWebhook.secret], SENT_AT);
  return {
    post: {
      summary,
      description: SIGNATURE,
      tags: ['Webhooks'],
      security: [],
      parameters: [
        { name: 'User-Agent', in: 'header', ...header('Always this value', { type: 'string' }, 'gov-payment-channel-webhooks/1') },
        { name: 'X-Service-Event', in: 'header', ...header('The event name, as `event` in the body', { type: 'string', enum: [event] }, event) },
        {
          name: 'X-Service-Delivery',
          in: 'header',
          ...header('The delivery id, as `deliveryId` in the body; the same on every retry of this delivery', uuid, EXAMPLE_IDS.DELIVERY_ID),
        },
        {
          name: 'X-Service-Timestamp',
          in: 'header',
          ...header('When this attempt was sent, Unix seconds (the same as webhook-timestamp)', { type: 'string', pattern: '^[0-9]+$' }, signed['x-service-timestamp'] ?? ''),
        },
        {
          name: 'X-Service-Signature',
          in: 'header',
          ...header(
            "Lowercase hex HMAC-SHA256 of the raw body bytes, keyed with the UTF-8 bytes of the webhook's current secret",
            { type: 'string', pattern: '^[0-9a-f]{64}$' },
            signed['x-service-signature'] ?? '',
          ),
        },
        {
          name: 'webhook-id',
          in: 'header',
          ...header('The event id (eventId in the body): the same on every retry and redelivery, and in every webhook it is sent to', uuid, EXAMPLE_IDS.EVENT_ID),
        },
        {
          name: 'webhook-timestamp',
          in: 'header',
          ...header('When this attempt was sent, Unix seconds; covered by webhook-signature', { type: 'string', pattern: '^[0-9]+$' }, signed['webhook-timestamp'] ?? ''),
        },
        {
          name: 'webhook-signature',
          in: 'header',
          ...header(
            'Space-separated `v1,<base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}">`, one per valid secret (two during a rotation\'s grace period); keyed with the decoded bytes of a `whsec_` secret of standard base64 (24 to 64 bytes), with the UTF-8 bytes of any other',
            { type: 'string', pattern: '^v1,[A-Za-z0-9+/]{43}=( v1,[A-Za-z0-9+/]{43}=)*$' },
            signed['webhook-signature'] ?? '',
          ),
        },
      ],
      requestBody: {
        required: true,
        description: `Example signed with the secret \`${createWebhook.secret}\`.`,
        content: { 'application/json': { schema: { $ref: `#/components/schemas/${component}` }, examples: { default: { value: example } } } },
      },
      responses: {
        '2XX': { description: 'Delivered: any 2xx within 5 seconds. The body is ignored.' },
        default: { description: 'Not delivered (as is a timeout or a refused connection): retried on the schedule, then `failed`.' },
      },
    },
  };
}

/** The document's `webhooks`: one per event a delivery can carry. */
export function webhooksSection() {
  return {
    'payment.submitted': delivery('payment.submitted', 'PaymentSubmittedEvent', 'A payment was submitted', {
      id: EXAMPLE_IDS.PAYMENT_ID,
      invoiceId: EXAMPLE_IDS.INVOICE_ID,
      partnerReference: EXAMPLE_IDS.PARTNER_REFERENCE,
    }),
    'payment.confirmed': delivery('payment.confirmed', 'PaymentConfirmedEvent', 'A payment was confirmed', {
      id: EXAMPLE_IDS.PAYMENT_ID,
      amount: 12000.5,
      partnerReference: EXAMPLE_IDS.PARTNER_REFERENCE,
    }),
    'payment.failed': delivery('payment.failed', 'PaymentFailedEvent', 'A payment failed after it was accepted', {
      id: EXAMPLE_IDS.PAYMENT_ID,
      invoiceId: EXAMPLE_IDS.INVOICE_ID,
      partnerReference: EXAMPLE_IDS.PARTNER_REFERENCE,
    }),
    'payment.canceled': delivery('payment.canceled', 'PaymentCanceledEvent', 'A payment was canceled', {
      id: EXAMPLE_IDS.PAYMENT_ID,
      invoiceId: EXAMPLE_IDS.INVOICE_ID,
      reason: 'expired',
      partnerReference: EXAMPLE_IDS.PARTNER_REFERENCE,
    }),
    'case.opened': delivery('case.opened', 'CaseOpenedEvent', 'A case was opened', { ...openedCase, comments: [] }),
    'case.updated': delivery('case.updated', 'CaseUpdatedEvent', 'A case was taken, commented on or escalated', {
      ...openedCase,
      status: 'in_progress',
      updatedAt: '2026-11-25T03:10:00.000Z',
      comments: [{ author: 'operator', text: 'Asked the ministry; waiting for its answer', createdAt: '2026-11-25T03:10:00.000Z' }],
    }),
    'case.resolved': delivery('case.resolved', 'CaseResolvedEvent', 'A case was answered', resolvedCase),
    [WEBHOOK_TEST_EVENT]: delivery(WEBHOOK_TEST_EVENT, 'WebhookTestEvent', 'A test delivery', {
      webhookId: EXAMPLE_IDS.WEBHOOK_ID,
      message: 'test delivery',
      sentAt: CREATED_AT,
    }),
  } satisfies Record<DeliveredEvent, unknown>;
}
