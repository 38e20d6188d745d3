import { randomBytes } from 'node:crypto';
import { InvalidRequestError, ConflictError, NotFoundError } from '../domain/errors.js';
import type { SecretCipher } from '../domain/secret-cipher.js';
import { WEBHOOK_TEST_EVENT, type DeliveryLogStatus, type WebhookEvent } from '../domain/vocabulary.js';
import type { WebhookChanges, WebhookRepository } from '../db/repositories/webhook.repository.js';
import type { WebhookDeliveryRepository } from '../db/repositories/webhook-delivery.repository.js';
import type { DeliveryLogEntry, DeliveryLogKey, DeliveryLogRepository } from '../db/repositories/delivery-log.repository.js';
import type { TargetGuard } from '../adapters/webhook-target.guard.js';
import type { Static } from 'typebox';
import type { DeliveryListBody, RecoverQueuedBody, RedeliveryQueuedBody, SecretRotatedBody, WebhookTestQueuedBody } from '../schemas/webhook.schema.js';
import { systemClock, type Clock } from '../domain/clock.port.js';
import { deliveryLogItem, webhookView, type WebhookView } from './webhook.view.js';

type DeliveryList = Static<typeof DeliveryListBody>;
type TestQueued = Static<typeof WebhookTestQueuedBody>;
type RedeliveryQueued = Static<typeof RedeliveryQueuedBody>;
type SecretRotated = Static<typeof SecretRotatedBody>;
type RecoverQueued = Static<typeof RecoverQueuedBody>;

/** The partner's redeliver adds nothing to the repository's transaction (the operator's adds an audit entry). */
const nothingElse = (): Promise<void> => Promise.resolve();

const DEFAULT_LOG_LIMIT = 100;

/** The log's page cursor is its last entry's sort key; the query schema has checked its shape. */
const cursorOf = (e: DeliveryLogEntry): string => `${e.at.getTime()}.${e.attempt}.${e.item_id}`;

function keyOf(cursor: string): DeliveryLogKey {
  const [ms = '', attempt = '', itemId = ''] = cursor.split('.');
  return { at: new Date(Number(ms)), attempt: Number(attempt), itemId };
}

/**
 * 32 random bytes in the Standard Webhooks form, `whsec_` and standard base64 (50 characters, within
 * the secret's 16 to 256): its libraries take it as it is.
 */
const generateSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

export interface WebhookServiceDeps {
  webhooks: WebhookRepository;
  deliveries: WebhookDeliveryRepository;
  deliveryLog: DeliveryLogRepository;
  cipher: SecretCipher;
  guard: TargetGuard;
  /** Webhooks a partner may have at once; bounds what one partner's endpoints can cost delivery. */
  maxPerPartner: number;
  /** How long a rotated-out secret still signs deliveries beside the new one. */
  secretRotationGraceMs: number;
  /** A delivery was queued due now (a test or a redelivery): the delivery job should claim it at once. */
  onQueued?: () => void;
  now?: Clock;
}

async function requireOwned(webhooks: WebhookRepository, partnerId: string, id: string): Promise<void> {
  if (!(await webhooks.existsForPartner(partnerId, id))) throw new NotFoundError('Webhook');
}

/** The partner's webhooks: registered, read, changed and deleted. */
function webhookRecords(deps: WebhookServiceDeps, now: Clock) {
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
      return { ...webhookView(row), secret: input.secret };
    },

    async list(partnerId: string): Promise<WebhookView[]> {
      return (await deps.webhooks.listForPartner(partnerId)).map(webhookView);
    },

    async get(partnerId: string, id: string): Promise<WebhookView> {
      const row = await deps.webhooks.getForPartner(partnerId, id);
      if (!row) throw new NotFoundError('Webhook');
      return webhookView(row);
    },

    /** A new url passes the same checks as at registration; enabling a disabled webhook lets its pending deliveries go at once. */
    async update(partnerId: string, id: string, changes: WebhookChanges): Promise<WebhookView> {
      if (changes.url !== undefined) {
        await requireOwned(deps.webhooks, partnerId, id);
        const violations = await deps.guard.violations(changes.url);
        if (violations.length > 0) throw new InvalidRequestError(violations);
      }
      const events = changes.events && [...new Set(changes.events)];
      const row = await deps.webhooks.update(partnerId, id, { ...changes, events }, now());
      if (!row) throw new NotFoundError('Webhook');
      if (changes.enabled === true) deps.onQueued?.();
      return webhookView(row);
    },

    /**
     * Replaces the secret (the given one, or a generated one, shown only here); the one replaced
     * keeps signing deliveries beside it for the grace period, and one replaced before it stops.
     */
    async rotateSecret(partnerId: string, id: string, secret: string | undefined): Promise<SecretRotated> {
      const next = secret ?? generateSecret();
      const previousSecretExpiresAt = new Date(now().getTime() + deps.secretRotationGraceMs);
      if (!(await deps.webhooks.rotateSecret(partnerId, id, deps.cipher.encrypt(next), previousSecretExpiresAt))) throw new NotFoundError('Webhook');
      return { id, secret: next, previousSecretExpiresAt: previousSecretExpiresAt.toISOString() };
    },

    async remove(partnerId: string, id: string): Promise<{ id: string; deleted: true }> {
      if (!(await deps.webhooks.deleteForPartner(partnerId, id, now()))) throw new NotFoundError('Webhook');
      return { id, deleted: true };
    },
  };
}

/** A webhook's deliveries as its partner handles them: recovered, tested, sent again and logged. */
function webhookDeliveryTools(deps: WebhookServiceDeps, now: Clock) {
  return {
    /** Queues, due now, every event of the webhook's types since `since` that it has neither received nor is about to. */
    async recover(partnerId: string, id: string, since: string): Promise<RecoverQueued> {
      const queued = await deps.deliveryLog.recover(partnerId, id, new Date(since), now());
      if (queued === null) throw new NotFoundError('Webhook');
      if (queued > 0) deps.onQueued?.();
      return { queued };
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
      await requireOwned(deps.webhooks, partnerId, id);
      const queued = await deps.deliveries.redeliver(deliveryId, now(), nothingElse, { partnerId, webhookId: id });
      if (queued === 'missing') throw new NotFoundError('Delivery');
      // Deleted since the ownership check: there is nowhere to send it.
      if (queued === 'deleted') throw new NotFoundError('Webhook');
      deps.onQueued?.();
      return { deliveryId: queued.id, status: 'pending' };
    },

    async deliveries(
      partnerId: string,
      id: string,
      query: { status?: DeliveryLogStatus; paymentId?: string; cursor?: string; limit?: number },
    ): Promise<DeliveryList> {
      await requireOwned(deps.webhooks, partnerId, id);
      const limit = query.limit ?? DEFAULT_LOG_LIMIT;
      // One entry more than the page tells whether another page follows.
      const rows = await deps.deliveryLog.list(id, { status: query.status, paymentId: query.paymentId }, query.cursor ? keyOf(query.cursor) : null, limit + 1);
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      return { items: page.map(deliveryLogItem), nextCursor: rows.length > limit && last ? cursorOf(last) : null };
    },
  };
}

export function createWebhookService(deps: WebhookServiceDeps) {
  const now = deps.now ?? systemClock;
  return { ...webhookRecords(deps, now), ...webhookDeliveryTools(deps, now) };
}

export type WebhookService = ReturnType<typeof createWebhookService>;
