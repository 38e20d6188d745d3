import { InvalidRequestError, ConflictError, NotFoundError } from '../domain/errors.js';
import type { SecretCipher } from '../domain/secret-cipher.js';
import type { WebhookEvent } from '../domain/vocabulary.js';
import type { WebhookRepository, WebhookRow } from '../db/repositories/webhook.repository.js';
import type { WebhookDeliveryRepository } from '../db/repositories/webhook-delivery.repository.js';
import type { TargetGuard } from '../adapters/webhook-target.guard.js';
import type { Static } from 'typebox';
import type { DeliveryListBody, WebhookBody } from '../schemas/webhook.schema.js';
import { systemClock, type Clock } from '../domain/clock.port.js';

type WebhookView = Static<typeof WebhookBody>;
type DeliveryList = Static<typeof DeliveryListBody>;

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
