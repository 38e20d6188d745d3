import { Type } from 'typebox';
import { ErrorBody, IsoDateTime, Nullable, Uuid } from './common.schema.js';
import { DELIVERED_EVENTS, WEBHOOK_EVENTS, WEBHOOK_TEST_EVENT } from '../domain/vocabulary.js';

const EventName = Type.Enum([...WEBHOOK_EVENTS], { description: 'payment.submitted or payment.confirmed' });

/** What a delivery can carry: a subscribed event, or the test delivery's `webhook.test`. */
const DeliveredEventName = Type.Enum([...DELIVERED_EVENTS], {
  description: `payment.submitted, payment.confirmed, or ${WEBHOOK_TEST_EVENT} for a test delivery (POST /webhooks/{id}/test)`,
});

export const CreateWebhookBody = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 2048, description: 'https URL (http is accepted in local development only)' }),
    secret: Type.String({ minLength: 16, maxLength: 256, description: 'HMAC-SHA256 key for X-Service-Signature' }),
    events: Type.Array(EventName, { minItems: 1, maxItems: WEBHOOK_EVENTS.length, uniqueItems: true }),
  },
  { additionalProperties: false },
);

export const WebhookBody = Type.Object({
  id: Uuid,
  url: Type.String(),
  events: Type.Array(EventName),
  createdAt: IsoDateTime,
});

export const WebhookCreatedBody = Type.Object({
  id: Uuid,
  url: Type.String(),
  events: Type.Array(EventName),
  createdAt: IsoDateTime,
  secret: Type.String({ description: 'Returned only in this response' }),
});

export const WebhookLimitBody = Type.Object(ErrorBody.properties, {
  description: 'The partner already has the most webhooks allowed (WEBHOOK_MAX_PER_PARTNER); delete one first.',
});

export const WebhookListBody = Type.Array(WebhookBody, { description: 'Webhook records, never with their secret' });

export const WebhookDeletedBody = Type.Object({ id: Uuid, deleted: Type.Literal(true) });

export const DeliveryListQuery = Type.Object(
  { limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 100 })) },
  { additionalProperties: false },
);

export const DeliveryListBody = Type.Object({
  items: Type.Array(
    Type.Object({
      event: DeliveredEventName,
      deliveryId: Uuid,
      status: Type.Enum(['succeeded', 'failed']),
      statusCode: Nullable(Type.Integer()),
      durationMs: Type.Integer(),
      error: Nullable(Type.String()),
      attempt: Type.Integer({ minimum: 1 }),
      nextRetryAt: Nullable(IsoDateTime, { description: 'null when delivered or given up' }),
      createdAt: IsoDateTime,
    }),
    { description: 'Recent delivery attempts, newest first' },
  ),
});

export const WebhookDeliveryParams = Type.Object({ id: Uuid, deliveryId: Uuid }, { additionalProperties: false });

export const WebhookTestQueuedBody = Type.Object(
  {
    deliveryId: Uuid,
    event: Type.Literal(WEBHOOK_TEST_EVENT),
  },
  { description: 'The test delivery is queued and due now; its attempts show in GET /webhooks/{id}/deliveries under this deliveryId.' },
);

export const RedeliveryQueuedBody = Type.Object(
  {
    deliveryId: Uuid,
    status: Type.Literal('pending'),
  },
  { description: 'One more attempt of the delivery is queued and due now; the attempt number continues from the last one.' },
);
