import { sql, type Selectable } from 'kysely';
import type { Db } from '../database.js';
import type { WebhooksTable } from '../db.types.js';
import type { WebhookEvent } from '../../domain/vocabulary.js';

export type WebhookRow = Omit<Selectable<WebhooksTable>, 'secret_ciphertext' | 'deleted_at' | 'partner_id' | 'slow_since'>;

const PUBLIC_COLUMNS = ['id', 'url', 'events', 'created_at'] as const;

export function createWebhookRepository(db: Db) {
  return {
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
      const row = await db
        .selectFrom('webhooks')
        .select('id')
        .where('id', '=', id)
        .where('partner_id', '=', partnerId)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
      return row !== undefined;
    },

    /** Soft delete keeps the delivery log; deliveries not yet sent are canceled with it. */
    async deleteForPartner(partnerId: string, id: string, at: Date): Promise<boolean> {
      return db.transaction().execute(async (trx) => {
        const row = await trx
          .updateTable('webhooks')
          .set({ deleted_at: at })
          .where('id', '=', id)
          .where('partner_id', '=', partnerId)
          .where('deleted_at', 'is', null)
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
  };
}

export type WebhookRepository = ReturnType<typeof createWebhookRepository>;
