import { randomBytes } from 'node:crypto';
import { InvalidRequestError, ConflictError, NotFoundError } from '../domain/errors.js';
import type { SecretCipher } from '../domain/secret-cipher.js';
import { WEBHOOK_TEST_EVENT, type DeliveryLogStatus, type WebhookEvent } from '../domain/vocabulary.js';
import type { WebhookChanges, WebhookRepository } from '../db/repositories/webhook.repository.js';
import type { WebhookDeliveryRepository } from '../db/repositories/webhook-delivery.repository.js';
import type { DeliveryLogEntry, DeliveryLogKey, DeliveryLogRepository, RecoverBatch, RecoverCursor } from '../db/repositories/delivery-log.repository.js';
import type { TargetGuard } from '../adapters/webhook-target.guard.js';
import type { Static } from 'typebox';
import type { DeliveryListBody, RecoverQueuedBody, RedeliveryQueuedBody, SecretRotatedBody, WebhookTestQueuedBody } from '../schemas/webhook.schema.js';
import type { Clock } from '../domain/clock.port.js';
import { decodeScopedCursor, encodeScopedCursor } from '../domain/page-cursor.js';
import { CURSOR_VIOLATION } from '../schemas/cursor.schema.js';
import { deliveryLogItem, webhookView, type WebhookView } from './webhook.view.js';

type DeliveryList = Static<typeof DeliveryListBody>;
type TestQueued = Static<typeof WebhookTestQueuedBody>;
type RedeliveryQueued = Static<typeof RedeliveryQueuedBody>;
type SecretRotated = Static<typeof SecretRotatedBody>;
type RecoverQueued = Static<typeof RecoverQueuedBody>;

/** The partner's redeliver adds nothing to the repository's transaction (the operator's adds an audit entry). */
const nothingElse = (): Promise<void> => Promise.resolve();

const DEFAULT_LOG_LIMIT = 100;
const DAY_MS = 86_400_000;

/*
 * The log's page cursor is its last entry's sort key (epoch ms, attempt, entry id), bound to the
 * partner and the webhook whose log it pages: another webhook's, another partner's or a made-up
 * cursor is a 400, as on GET /events, rather than an empty or foreign page.
 */
const LOG_CURSOR_VERSION = 'd1';
const LOG_POSITION = /^([0-9]{1,15})\.([0-9]{1,9})\.([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

const cursorOf = (partnerId: string, webhookId: string, e: DeliveryLogEntry): string =>
  encodeScopedCursor(LOG_CURSOR_VERSION, [partnerId, webhookId], `${e.at.getTime()}.${e.attempt}.${e.item_id}`);

function keyOf(partnerId: string, webhookId: string, cursor: string): DeliveryLogKey {
  const [, ms, attempt, itemId] = decodeScopedCursor(LOG_CURSOR_VERSION, [partnerId, webhookId], cursor, LOG_POSITION) ?? [];
  if (ms === undefined || attempt === undefined || itemId === undefined) throw new InvalidRequestError([CURSOR_VIOLATION], '/cursor');
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
  /** How far back a recovery may reach: events older than this are deleted (EVENT_RETENTION_MS). */
  eventRetentionMs: number;
  /** Deliveries one statement of a recovery or an enable queues or makes due (WEBHOOK_RECOVER_BATCH). */
  recoverBatch: number;
  /** A delivery was queued due now (a test or a redelivery): the delivery job should claim it at once. */
  onQueued?: () => void;
  /** One statement of a recovery or an enable ran, and queued or made due this many deliveries. */
  onRecoverBatch?: (queued: number) => void;
  now: Clock;
}

/** Makes the webhook's waiting deliveries due at `at`, a batch per statement; how many. */
async function sendWaitingNow(deps: WebhookServiceDeps, id: string, at: Date): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await deps.deliveries.sendWaitingNow(id, at, deps.recoverBatch);
    deps.onRecoverBatch?.(n);
    total += n;
    if (n < deps.recoverBatch) return total;
  }
}

/** The 400 of a recovery reaching back past the events kept: they may be deleted already. */
function beyondRetention(retentionMs: number): InvalidRequestError {
  const days = retentionMs / DAY_MS;
  const reach = Number.isInteger(days) ? `${days} day${days === 1 ? '' : 's'}` : `${Math.floor(retentionMs / 3_600_000)} hours`;
  return new InvalidRequestError([`since must be within the event retention of ${reach} (EVENT_RETENTION_MS)`], '/since');
}

async function requireOwned(webhooks: WebhookRepository, partnerId: string, id: string): Promise<void> {
  if (!(await webhooks.existsForPartner(partnerId, id))) throw new NotFoundError('Webhook');
}

/** The partner's webhooks (registered, read, changed and deleted) and their deliveries as the partner handles them: recovered, tested, sent again and logged. */
export function createWebhookService(deps: WebhookServiceDeps) {
  const { now } = deps;
  return {
    // The webhooks themselves.
    /** The secret is echoed once, here; only its ciphertext is stored. */
    async register(partnerId: string, input: { url: string; secret: string; events: WebhookEvent[] }): Promise<WebhookView & { secret: string }> {
      const violations = await deps.guard.violations(input.url);
      if (violations.length > 0) throw new InvalidRequestError(violations, '/url');
      const row = await deps.webhooks.createWithinLimit(
        { partnerId, url: input.url, events: [...new Set(input.events)], secretCiphertext: deps.cipher.encrypt(input.secret) },
        deps.maxPerPartner,
      );
      if (!row) {
        throw new ConflictError(`A partner may have at most ${deps.maxPerPartner} webhooks; delete one (DELETE /api/v1/webhooks/{id}) before registering another`, 'webhook_limit_reached');
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

    /**
     * A new url passes the same checks as at registration. Enabling says the receiver is back: the
     * deliveries waiting for a retry, hours away perhaps, are made due and go at once.
     */
    async update(partnerId: string, id: string, changes: WebhookChanges): Promise<WebhookView> {
      if (changes.url !== undefined) {
        await requireOwned(deps.webhooks, partnerId, id);
        const violations = await deps.guard.violations(changes.url);
        if (violations.length > 0) throw new InvalidRequestError(violations, '/url');
      }
      const events = changes.events && [...new Set(changes.events)];
      const row = await deps.webhooks.update(partnerId, id, { ...changes, events }, now());
      if (!row) throw new NotFoundError('Webhook');
      if (changes.enabled === true) {
        await sendWaitingNow(deps, id, now());
        deps.onQueued?.();
      }
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

    // Their deliveries.
    /**
     * Sends, once and now, every event of the webhook's types since `since` it has not received:
     * batch after batch of WEBHOOK_RECOVER_BATCH events, each its own short statement, so a
     * recovery reaching back months holds no lock for long and the deliveries of others go on
     * meanwhile; `queued` is the sum of the batches. Each batch commits on its own: a request cut
     * short leaves what it queued queued, and asking again queues the rest.
     */
    async recover(partnerId: string, id: string, since: string): Promise<RecoverQueued> {
      const at = now();
      const from = new Date(since);
      if (from.getTime() < at.getTime() - deps.eventRetentionMs) throw beyondRetention(deps.eventRetentionMs);
      let queued = 0;
      let after: RecoverCursor | null = null;
      for (;;) {
        const batch: RecoverBatch | null = await deps.deliveryLog.recoverBatch(partnerId, id, from, at, after, deps.recoverBatch);
        // Gone before the first batch: not the partner's. Deleted after one: its deliveries are canceled with it.
        if (!batch) {
          if (after === null) throw new NotFoundError('Webhook');
          break;
        }
        deps.onRecoverBatch?.(batch.queued);
        queued += batch.queued;
        if (batch.queued > 0) deps.onQueued?.();
        if (batch.events < deps.recoverBatch || !batch.last) break;
        after = batch.last;
      }
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
      const after = query.cursor === undefined ? null : keyOf(partnerId, id, query.cursor);
      await requireOwned(deps.webhooks, partnerId, id);
      const limit = query.limit ?? DEFAULT_LOG_LIMIT;
      // One entry more than the page tells whether another page follows.
      const rows = await deps.deliveryLog.list(id, { status: query.status, paymentId: query.paymentId }, after, limit + 1);
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      return { items: page.map(deliveryLogItem), nextCursor: rows.length > limit && last ? cursorOf(partnerId, id, last) : null };
    },
  };
}

export type WebhookService = ReturnType<typeof createWebhookService>;
