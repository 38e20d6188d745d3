import { sql, type ExpressionBuilder, type Selectable } from 'kysely';
import type { Db } from '../database.js';
import type { Database, WebhooksTable } from '../db.types.js';
import type { WebhookDisabledReason, WebhookEvent } from '../../domain/vocabulary.js';

export type WebhookRow = Pick<Selectable<WebhooksTable>, 'id' | 'url' | 'events' | 'created_at' | 'disabled_reason'>;

const PUBLIC_COLUMNS = ['id', 'url', 'events', 'created_at', 'disabled_reason'] as const;

/** What a partner may change on a webhook; `enabled` switches between enabled and disabled by hand. */
export interface WebhookChanges {
  url?: string;
  events?: WebhookEvent[];
  enabled?: boolean;
}

/** A webhook the service disabled because every attempt failed for too long. */
export interface DisabledWebhook {
  id: string;
  partner_id: string;
}

/** The partner's own webhook, not deleted. */
function ownedLive(eb: ExpressionBuilder<Database, 'webhooks'>, partnerId: string, id: string) {
  return eb.and([eb('id', '=', id), eb('partner_id', '=', partnerId), eb('deleted_at', 'is', null)]);
}

export function createWebhookRepository(db: Db) {
  return {
    // The partner's webhooks as it reads them.

    async listForPartner(partnerId: string): Promise<WebhookRow[]> {
      return db
        .selectFrom('webhooks')
        .select(PUBLIC_COLUMNS)
        .where('partner_id', '=', partnerId)
        .where('deleted_at', 'is', null)
        .orderBy('created_at')
        .orderBy('id')
        .execute();
    },

    async existsForPartner(partnerId: string, id: string): Promise<boolean> {
      return (await db.selectFrom('webhooks').select('id').where((eb) => ownedLive(eb, partnerId, id)).executeTakeFirst()) !== undefined;
    },

    async getForPartner(partnerId: string, id: string): Promise<WebhookRow | undefined> {
      return db.selectFrom('webhooks').select(PUBLIC_COLUMNS).where((eb) => ownedLive(eb, partnerId, id)).executeTakeFirst();
    },

    // A partner's webhook comes and goes.

    /**
     * Inserts the webhook unless the partner already has `max` of them (deleted ones do not
     * count); null then. The partner row lock makes concurrent registrations of one partner
     * count one after another, so together they cannot pass the cap; NO KEY UPDATE leaves the
     * key-share locks of inserts referencing the partner (payments, events) unblocked.
     */
    async createWithinLimit(
      input: { partnerId: string; url: string; events: WebhookEvent[]; secretCiphertext: string },
      max: number,
    ): Promise<WebhookRow | null> {
      return db.transaction().execute(async (trx) => {
        await trx.selectFrom('partners').select('id').where('id', '=', input.partnerId).forNoKeyUpdate().executeTakeFirst();
        const { n } = await trx
          .selectFrom('webhooks')
          .select(sql<number>`count(*)::int`.as('n'))
          .where('partner_id', '=', input.partnerId)
          .where('deleted_at', 'is', null)
          .executeTakeFirstOrThrow();
        if (Number(n) >= max) return null;
        return trx
          .insertInto('webhooks')
          .values({ partner_id: input.partnerId, url: input.url, events: JSON.stringify(input.events), secret_ciphertext: input.secretCiphertext })
          .returning(PUBLIC_COLUMNS)
          .executeTakeFirstOrThrow();
      });
    },

    /** Soft delete keeps the delivery log; deliveries not yet sent are canceled with it. */
    async deleteForPartner(partnerId: string, id: string, at: Date): Promise<boolean> {
      return db.transaction().execute(async (trx) => {
        const row = await trx
          .updateTable('webhooks')
          .set({ deleted_at: at })
          .where((eb) => ownedLive(eb, partnerId, id))
          .returning('id')
          .executeTakeFirst();
        if (!row) return false;
        await trx
          .updateTable('webhook_deliveries')
          .set({ status: 'canceled', updated_at: at })
          .where('webhook_id', '=', id)
          .where('status', '=', 'pending')
          .execute();
        return true;
      });
    },

    // What the partner changes on its webhook.

    /**
     * Applies the partner's changes; undefined when the webhook is not the partner's (or deleted).
     * Disabling by hand makes the reason `manual` whatever it was; enabling a disabled webhook
     * starts its failure window afresh, so failures from before it no longer count toward disabling.
     */
    async update(partnerId: string, id: string, changes: WebhookChanges, at: Date): Promise<WebhookRow | undefined> {
      const disable = changes.enabled === false;
      const enable = changes.enabled === true;
      return db
        .updateTable('webhooks')
        .set((eb) => ({
          ...(changes.url === undefined ? {} : { url: changes.url }),
          ...(changes.events === undefined ? {} : { events: JSON.stringify(changes.events) }),
          ...(disable ? { disabled_at: eb.fn.coalesce('disabled_at', sql<Date>`${at}::timestamptz`), disabled_reason: 'manual' as const } : {}),
          ...(enable
            ? {
                disabled_at: null,
                disabled_reason: null,
                enabled_at: sql<Date | null>`CASE WHEN disabled_at IS NULL THEN enabled_at ELSE ${at}::timestamptz END`,
              }
            : {}),
        }))
        .where((eb) => ownedLive(eb, partnerId, id))
        .returning(PUBLIC_COLUMNS)
        .executeTakeFirst();
    },

    /** The current secret becomes the previous one, valid until `previousExpiresAt`; a previous one before it is dropped. */
    async rotateSecret(partnerId: string, id: string, secretCiphertext: string, previousExpiresAt: Date): Promise<boolean> {
      const row = await db
        .updateTable('webhooks')
        .set((eb) => ({
          previous_secret_ciphertext: eb.ref('secret_ciphertext'),
          previous_secret_expires_at: previousExpiresAt,
          secret_ciphertext: secretCiphertext,
        }))
        .where((eb) => ownedLive(eb, partnerId, id))
        .returning('id')
        .executeTakeFirst();
      return row !== undefined;
    },

    // Webhooks whose receivers keep failing: disabled by the service, and counted for /metrics.

    /**
     * Disables (reason `failing`) at most `limit` enabled webhooks whose every attempt has failed
     * for `afterMs`: one is still failing (slow_since is when the run of failures began, and a
     * success clears it) and an attempt made at least `afterMs` after that start failed too. The
     * start is never before the webhook was last enabled. Rows another instance holds are skipped;
     * the condition is checked again on the locked row, so an attempt that succeeded meanwhile wins.
     */
    async disableFailing(afterMs: number, at: Date, limit: number): Promise<DisabledWebhook[]> {
      const failing = sql<boolean>`slow_since IS NOT NULL AND disabled_at IS NULL AND deleted_at IS NULL AND EXISTS (
          SELECT 1 FROM webhook_attempts a
          WHERE a.webhook_id = webhooks.id
            AND a.created_at >= greatest(slow_since, coalesce(enabled_at, slow_since)) + ${afterMs} * interval '1 millisecond'
        )`;
      const { rows } = await sql<DisabledWebhook>`
        UPDATE webhooks SET disabled_at = ${at}::timestamptz, disabled_reason = 'failing'
        WHERE id IN (SELECT id FROM webhooks WHERE ${failing} ORDER BY slow_since LIMIT ${limit} FOR UPDATE SKIP LOCKED)
          AND ${failing}
        RETURNING id, partner_id`.execute(db);
      return rows;
    },

    /** Disabled webhooks (not deleted), by reason, for /metrics. */
    async countDisabled(): Promise<Record<WebhookDisabledReason, number>> {
      const rows = await db
        .selectFrom('webhooks')
        .select(['disabled_reason', sql<number>`count(*)::int`.as('n')])
        .where('deleted_at', 'is', null)
        .where('disabled_at', 'is not', null)
        .groupBy('disabled_reason')
        .execute();
      const counts: Record<WebhookDisabledReason, number> = { manual: 0, failing: 0 };
      for (const r of rows) if (r.disabled_reason) counts[r.disabled_reason] = Number(r.n);
      return counts;
    },
  };
}

export type WebhookRepository = ReturnType<typeof createWebhookRepository>;
