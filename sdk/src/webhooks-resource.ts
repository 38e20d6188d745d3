import type { PaymentChannelClient } from './client.js';
import type { SendRequest } from './transport.js';
import type {
  UpdateWebhookInput,
  Webhook,
  WebhookCreated,
  WebhookDeleted,
  WebhookDeliveryList,
  WebhookRecoverQueued,
  WebhookRedeliveryQueued,
  WebhookSecretRotated,
  WebhookTestQueued,
} from './types.js';

const id = (value: string) => encodeURIComponent(value);

export function webhooksResource(request: SendRequest): Pick<PaymentChannelClient, 'webhooks'> {
  return {
    webhooks: {
      create: (input) =>
        request<WebhookCreated>({ method: 'POST', path: '/webhooks', body: { url: input.url, secret: input.secret, events: input.events }, idempotent: false }),
      list: () => request<Webhook[]>({ method: 'GET', path: '/webhooks', idempotent: true }),
      get: (webhookId) => request<Webhook>({ method: 'GET', path: `/webhooks/${id(webhookId)}`, idempotent: true }),
      update: (webhookId, input) => {
        const body: UpdateWebhookInput = {};
        if (input.url !== undefined) body.url = input.url;
        if (input.events !== undefined) body.events = input.events;
        if (input.enabled !== undefined) body.enabled = input.enabled;
        // Setting the same values again changes nothing more.
        return request<Webhook>({ method: 'PATCH', path: `/webhooks/${id(webhookId)}`, body, idempotent: true });
      },
      rotateSecret: (webhookId, secret) =>
        request<WebhookSecretRotated>({
          method: 'POST',
          path: `/webhooks/${id(webhookId)}/rotate-secret`,
          body: secret === undefined ? {} : { secret },
          idempotent: false,
        }),
      // A repeat queues nothing more: what the first call queued is pending.
      recover: (webhookId, since) =>
        request<WebhookRecoverQueued>({ method: 'POST', path: `/webhooks/${id(webhookId)}/recover`, body: { since }, idempotent: true }),
      delete: (webhookId) => request<WebhookDeleted>({ method: 'DELETE', path: `/webhooks/${id(webhookId)}`, idempotent: true }),
      deliveries: (webhookId, query = {}) =>
        request<WebhookDeliveryList>({
          method: 'GET',
          path: `/webhooks/${id(webhookId)}/deliveries`,
          query: { status: query.status, paymentId: query.paymentId, cursor: query.cursor, limit: query.limit },
          idempotent: true,
        }),
      test: (webhookId) => request<WebhookTestQueued>({ method: 'POST', path: `/webhooks/${id(webhookId)}/test`, idempotent: false }),
      // A repeat only re-queues the same delivery (at most one extra attempt, which receivers deduplicate).
      redeliver: (webhookId, deliveryId) =>
        request<WebhookRedeliveryQueued>({ method: 'POST', path: `/webhooks/${id(webhookId)}/deliveries/${id(deliveryId)}/redeliver`, idempotent: true }),
    },
  };
}
