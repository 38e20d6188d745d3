import { Type } from 'typebox';
import { ErrorBody, IsoDateTime, Nullable, StringEnum, Uuid } from './common.schema.js';
import { PositionCursor } from './cursor.schema.js';
import { DELIVERED_EVENTS, DELIVERY_LOG_STATUSES, WEBHOOK_DISABLED_REASONS, WEBHOOK_EVENTS, WEBHOOK_TEST_EVENT, type WebhookDisabledReason } from '../domain/vocabulary.js';

const EventName = Type.Enum([...WEBHOOK_EVENTS], { description: WEBHOOK_EVENTS.join(', ') });

/** What a delivery can carry: a subscribed event, or the test delivery's `webhook.test`. */
const DeliveredEventName = Type.Enum([...DELIVERED_EVENTS], {
  description: `${WEBHOOK_EVENTS.join(', ')}, or ${WEBHOOK_TEST_EVENT} for a test delivery (POST /webhooks/{id}/test)`,
});

const WebhookUrl = Type.String({ minLength: 1, maxLength: 2048, description: 'https URL (http is accepted in local development only)' });
const WebhookSecret = Type.String({
  minLength: 16,
  maxLength: 256,
  description:
    'HMAC-SHA256 key of the signatures. X-Service-Signature is keyed with its UTF-8 bytes. webhook-signature is keyed with the base64-decoded bytes when the secret is `whsec_` followed by standard base64 (with padding) of 24 to 64 bytes, as the Standard Webhooks specification writes one, and with its UTF-8 bytes otherwise',
});
const WebhookEvents = Type.Array(EventName, { minItems: 1, maxItems: WEBHOOK_EVENTS.length, uniqueItems: true });

export const CreateWebhookBody = Type.Object(
  {
    url: WebhookUrl,
    secret: WebhookSecret,
    events: WebhookEvents,
  },
  { additionalProperties: false },
);

/** The webhook record; never its secret. */
const webhookFields = {
  id: Uuid,
  url: Type.String(),
  events: Type.Array(EventName),
  enabled: Type.Boolean({ description: 'false while disabled: nothing is sent to it, and events meanwhile wait for POST /webhooks/{id}/recover' }),
  disabledReason: Type.Unsafe<WebhookDisabledReason | null>({
    type: ['string', 'null'],
    enum: [...WEBHOOK_DISABLED_REASONS, null],
    description: 'null while enabled; manual after PATCH enabled: false; failing when the service disabled it because every attempt failed for WEBHOOK_DISABLE_AFTER_MS (5 days)',
  }),
  createdAt: IsoDateTime,
};

export const WebhookBody = Type.Object(webhookFields);

export const WebhookCreatedBody = Type.Object({
  ...webhookFields,
  secret: Type.String({ description: 'Returned only in this response' }),
});

export const UpdateWebhookBody = Type.Object(
  {
    url: Type.Optional(WebhookUrl),
    events: Type.Optional(WebhookEvents),
    enabled: Type.Optional(Type.Boolean({ description: 'false disables it (reason manual); true enables it again and its pending deliveries go at once, those waiting for a retry too' })),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const RotateSecretBody = Type.Object(
  { secret: Type.Optional({ ...WebhookSecret, description: 'The new secret; a random one is generated when omitted' }) },
  { additionalProperties: false },
);

export const SecretRotatedBody = Type.Object({
  id: Uuid,
  secret: Type.String({
    description: 'The new secret; shown only in this response. A generated one is `whsec_` and the standard base64 of 32 random bytes, the Standard Webhooks form',
  }),
  previousSecretExpiresAt: IsoDateTime,
});

export const RecoverBody = Type.Object(
  {
    since: Type.String({
      format: 'date-time',
      description:
        'Events at or after this time are sent again unless delivered or already on their way; at most EVENT_RETENTION_MS (90 days) back, older is a 400 naming the limit',
    }),
  },
  { additionalProperties: false },
);

export const RecoverQueuedBody = Type.Object(
  {
    queued: Type.Integer({
      minimum: 0,
      description: 'Deliveries queued or made due now: new ones, failed or canceled ones queued again, and ones waiting for a retry; 0 when asked again while they are pending',
    }),
  },
  {
    description:
      'Every event of the webhook\'s types since `since` with no succeeded delivery to it is sent once, now: a delivery waiting for its next retry is made due at once, a failed, canceled or missing one is queued. The work goes in batches of WEBHOOK_RECOVER_BATCH deliveries, each its own short statement, all done before this answer.',
  },
);

export const WebhookLimitBody = Type.Object({ ...ErrorBody.properties, code: StringEnum(['webhook_limit_reached'] as const) }, {
  description: 'The partner already has the most webhooks allowed (WEBHOOK_MAX_PER_PARTNER); delete one first.',
});

export const WebhookListBody = Type.Array(WebhookBody, { description: 'Webhook records, never with their secret' });

export const WebhookDeletedBody = Type.Object({ id: Uuid, deleted: Type.Literal(true) });

export const DeliveryListQuery = Type.Object(
  {
    status: Type.Optional(StringEnum(DELIVERY_LOG_STATUSES)),
    paymentId: Type.Optional(Uuid),
    cursor: Type.Optional(PositionCursor),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 100 })),
  },
  { additionalProperties: false },
);

export const DeliveryListBody = Type.Object({
  items: Type.Array(
    Type.Object({
      event: DeliveredEventName,
      eventId: Uuid,
      paymentId: Nullable(Uuid, { description: 'The payment the event is about; null for webhook.test' }),
      deliveryId: Uuid,
      status: StringEnum(DELIVERY_LOG_STATUSES, {
        description: 'succeeded or failed: an attempt made; pending: the next attempt of a delivery not yet sent, due at createdAt',
      }),
      statusCode: Nullable(Type.Integer()),
      durationMs: Type.Integer({ description: '0 for a pending entry' }),
      error: Nullable(Type.String()),
      attempt: Type.Integer({ minimum: 1 }),
      nextRetryAt: Nullable(IsoDateTime, { description: 'null when delivered or given up' }),
      createdAt: IsoDateTime,
    }),
    { description: 'Delivery attempts and pending deliveries, newest first' },
  ),
  nextCursor: Nullable(Type.String(), { description: 'Pass as cursor for the next page; null on the last one' }),
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
