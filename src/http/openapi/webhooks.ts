import { WEBHOOK_TEST_EVENT, type DeliveredEvent } from '../../domain/vocabulary.js';
import { deliveryBody, signBody } from '../../domain/webhook-message.js';
import { EXAMPLE_IDS, createWebhook } from './examples.js';

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
    required: ['event', 'deliveryId', 'createdAt', 'data'],
    additionalProperties: false,
    properties: {
      event: { type: 'string', enum: [event] },
      deliveryId: { ...uuid, description: 'The delivery id, the same as `X-Service-Delivery`; the same on every retry of this delivery.' },
      createdAt: { ...dateTime, description: 'When the event happened (not when this attempt was sent).' },
      data,
    },
  };
}

/** Added to components.schemas. */
export const WEBHOOK_COMPONENTS = {
  PaymentSubmittedEvent: eventSchema('payment.submitted', 'A payment reached `submitted` (normally along with the 201 of `POST /payments`).', {
    type: 'object',
    required: ['id', 'invoiceId'],
    additionalProperties: false,
    properties: { id: { ...uuid, description: 'The payment id' }, invoiceId: { ...uuid, description: 'The paid invoice' } },
  }),
  PaymentConfirmedEvent: eventSchema('payment.confirmed', 'A payment reached `confirmed`: the ministry system has the money.', {
    type: 'object',
    required: ['id', 'amount'],
    additionalProperties: false,
    properties: { id: { ...uuid, description: 'The payment id' }, amount: { type: 'number', description: 'Tugrik' } },
  }),
  WebhookTestEvent: eventSchema(WEBHOOK_TEST_EVENT, 'A test delivery asked for with `POST /webhooks/{id}/test`; sent whatever events the webhook subscribed to.', {
    type: 'object',
    required: ['webhookId', 'message', 'sentAt'],
    additionalProperties: false,
    properties: { webhookId: uuid, message: { type: 'string', enum: ['test delivery'] }, sentAt: { ...dateTime, description: 'When the test was asked for' } },
  }),
};

const SIGNATURE = `Each delivery is signed: \`X-Service-Signature\` is the lowercase hex HMAC-SHA256 of the exact
request body bytes, keyed with the webhook's secret (returned once, by \`POST /webhooks\`).

To verify: compute \`hex(HMAC-SHA256(secret, rawBody))\` over the raw bytes **before** any JSON
parsing (re-serialised JSON will not match) and compare it with the header in constant time
(e.g. Node's \`crypto.timingSafeEqual\`); refuse the call when they differ. Only the body is signed:
\`X-Service-Timestamp\` is not covered, so do not use it for replay protection; deduplicate by
\`X-Service-Delivery\` (or payment \`id\` plus \`event\`) instead. Retries carry the byte-identical body
and arrive up to about 28 hours after the event.

Answer any \`2xx\` within 5 seconds; anything else (another status, a timeout, a refused connection)
is retried on the schedule (by default immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h).
Delivery is at least once.`;

const header = (description: string, schema: object, example: string) => ({ description, required: true, schema, example });

const CREATED_AT = '2026-11-25T08:58:54.108Z';

function delivery(event: DeliveredEvent, component: keyof typeof WEBHOOK_COMPONENTS, summary: string, data: Record<string, unknown>) {
  const example = { event, deliveryId: EXAMPLE_IDS.DELIVERY_ID, createdAt: CREATED_AT, data };
  // The real signature of the example body with the example secret of POST /webhooks.
  const signature = signBody(createWebhook.secret, deliveryBody({ ...example, createdAt: new Date(CREATED_AT) }));
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
          ...header('When this attempt was sent, Unix seconds (not covered by the signature)', { type: 'string', pattern: '^[0-9]+$' }, '1795597134'),
        },
        {
          name: 'X-Service-Signature',
          in: 'header',
          ...header(
            "Lowercase hex HMAC-SHA256 of the raw body bytes, keyed with the webhook's secret",
            { type: 'string', pattern: '^[0-9a-f]{64}$' },
            signature,
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
    }),
    'payment.confirmed': delivery('payment.confirmed', 'PaymentConfirmedEvent', 'A payment was confirmed', { id: EXAMPLE_IDS.PAYMENT_ID, amount: 12000.5 }),
    [WEBHOOK_TEST_EVENT]: delivery(WEBHOOK_TEST_EVENT, 'WebhookTestEvent', 'A test delivery', {
      webhookId: EXAMPLE_IDS.WEBHOOK_ID,
      message: 'test delivery',
      sentAt: CREATED_AT,
    }),
  };
}
