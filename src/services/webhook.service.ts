import { InvalidRequestError, ConflictError, NotFoundError } from '../domain/errors.js';
import type { SecretCipher } from '../domain/secret-cipher.js';
import { WEBHOOK_TEST_EVENT, type WebhookEvent } from '../domain/vocabulary.js';
import type { WebhookRepository, WebhookRow } from '../db/repositories/webhook.repository.js';
import type { WebhookDeliveryRepository } from '../db/repositories/webhook-delivery.repository.js';
import type { TargetGuard } from '../adapters/webhook-target.guard.js';
import type { Static } from 'typebox';
import type { DeliveryListBody, RedeliveryQueuedBody, WebhookBody, WebhookTestQueuedBody } from '../schemas/webhook.schema.js';
import { systemClock, type Clock } from '../domain/clock.port.js';

type WebhookView = Static<typeof WebhookBody>;
type DeliveryList = Static<typeof DeliveryListBody>;
type TestQueued = Static<typeof WebhookTestQueuedBody>;
type RedeliveryQueued = Static<typeof RedeliveryQueuedBody>;

/** The partner's redeliver adds nothing to the repository's transaction (the operator's adds an audit entry). */
const nothingElse = (): Promise<void> => Promise.resolve();

function toView(row: WebhookRow): WebhookView {
  return { id: row.id, url: row.url, events: row.events, createdAt: row.created_at.toISOString() };
}

export function createWebhookService(deps: {
  webhooks: WebhookRepository;
  deliveries: WebhookDeliveryRepository;
  cipher: SecretCipher;
  guard: TargetGuard;
  /** Webhooks a partner may have at once; bounds what one partner's endpoints can cost delivery. */
  maxPerPartner: number;
  /** A delivery was queued due now (a test or a redelivery): the delivery job should claim it at once. */
  onQueued?: () => void;
  now?: Clock;
}) {
  const now = deps.now ?? systemClock;

  async function requireOwned(partnerId: string, id: string): Promise<void> {
    if (!(await deps.webhooks.existsForPartner(partnerId, id))) throw new NotFoundError('Webhook');
  }

  return {
    /** The secret is echoed once, here; only its ciphertext is stored. */
    async register(partnerId: string, input: { url: string; secret: string; events: WebhookEvent[] }): Promise<WebhookView & { secret: string }> {
      const violations = await deps.guard.violations(input.url);
      if (violations.length > 0) throw new InvalidRequestError(violations);
      const row = await deps.webhooks.createWithinLimit(
        { partnerId, url: input.url, events: [...new Set(input.events)], secretCiphertext: deps.cipher.encrypt(input.secret) },
        deps.maxPerPartner,
      );
      if (!row) {
        throw new ConflictError(`A partner may have at most ${deps.maxPerPartner} webhooks; delete one (DELETE /api/v1/webhooks/{id}) before registering another`);
      }
      return { ...toView(row), secret: input.secret };
    },

    async list(partnerId: string): Promise<WebhookView[]> {
      return (await deps.webhooks.listForPartner(partnerId)).map(toView);
    },

    async remove(partnerId: string, id: string): Promise<{ id: string; deleted: true }> {
      if (!(await deps.webhooks.deleteForPartner(partnerId, id, now()))) throw new NotFoundError('Webhook');
      return { id, deleted: true };
    },

    /**
     * Queues a signed `webhook.test` delivery to this webhook only, whatever it subscribed to,
     * through the outbox like any event: it is retried on the same schedule and shows in the log.
     */
    async sendTest(partnerId: string, id: string): Promise<TestQueued> {
      const at = now();
      const deliveryId = await deps.deliveries.queueTest({
        partnerId,
        webhookId: id,
        data: { webhookId: id, message: 'test delivery', sentAt: at.toISOString() },
        dueAt: at,
      });
      if (!deliveryId) throw new NotFoundError('Webhook');
      deps.onQueued?.();
      return { deliveryId, event: WEBHOOK_TEST_EVENT };
    },

    /**
     * Queues one more attempt of a delivery of the partner's own (not deleted) webhook, due now,
     * whether it was delivered, failed or is still pending; the attempt count goes on.
     */
    async redeliver(partnerId: string, id: string, deliveryId: string): Promise<RedeliveryQueued> {
      await requireOwned(partnerId, id);
      const queued = await deps.deliveries.redeliver(deliveryId, now(), nothingElse, { partnerId, webhookId: id });
      if (queued === 'missing') throw new NotFoundError('Delivery');
      // Deleted since the ownership check: there is nowhere to send it.
      if (queued === 'deleted') throw new NotFoundError('Webhook');
      deps.onQueued?.();
      return { deliveryId: queued.id, status: 'pending' };
    },

    async deliveries(partnerId: string, id: string, limit: number): Promise<DeliveryList> {
      await requireOwned(partnerId, id);
      const rows = await deps.deliveries.listAttempts(id, limit);
      return {
        items: rows.map((r) => ({
          event: r.event,
          deliveryId: r.delivery_id,
          status: r.succeeded ? 'succeeded' : 'failed',
          statusCode: r.status_code,
          durationMs: r.duration_ms,
          error: r.error,
          attempt: r.attempt,
          nextRetryAt: r.next_retry_at ? r.next_retry_at.toISOString() : null,
          createdAt: r.created_at.toISOString(),
        })),
      };
    },
  };
}

export type WebhookService = ReturnType<typeof createWebhookService>;
