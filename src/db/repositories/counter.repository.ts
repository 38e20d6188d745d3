import { sql } from 'kysely';
import type { Db } from '../database.js';

export function createCounterRepository(db: Db) {
  return {
    /**
     * Folds up to `limit` of the oldest deltas into the counters and drops counters that reach
     * zero (an open due date whose invoices were all paid). SKIP LOCKED lets several instances
     * fold disjoint batches; each upserts in key order, so two never deadlock on counter rows.
     * Returns the number of deltas folded.
     */
    async rollup(limit: number): Promise<number> {
      return db.transaction().execute(async (trx) => {
        const { rows } = await sql<{ kind: string; partner_id: string; label: string; bucket: string; n: string; folded: string }>`
          WITH batch AS (
            DELETE FROM counter_deltas
            WHERE id IN (SELECT id FROM counter_deltas ORDER BY id LIMIT ${limit} FOR UPDATE SKIP LOCKED)
            RETURNING kind, partner_id, label, bucket, n, amount
          ), sums AS (
            SELECT kind, partner_id, label, bucket, sum(n) AS n, sum(amount) AS amount, count(*) AS folded
            FROM batch GROUP BY kind, partner_id, label, bucket
          ), upserted AS (
            INSERT INTO counters AS c (kind, partner_id, label, bucket, n, amount)
            SELECT kind, partner_id, label, bucket, n, amount FROM sums ORDER BY kind, partner_id, label, bucket
            ON CONFLICT (kind, partner_id, label, bucket)
            DO UPDATE SET n = c.n + excluded.n, amount = c.amount + excluded.amount
            RETURNING c.kind, c.partner_id, c.label, c.bucket, c.n
          )
          SELECT u.kind, u.partner_id, u.label, u.bucket::text AS bucket, u.n, s.folded
          FROM upserted u JOIN sums s USING (kind, partner_id, label, bucket)`.execute(trx);
        const emptied = rows.filter((r) => Number(r.n) === 0);
        for (const r of emptied) {
          await trx
            .deleteFrom('counters')
            .where('kind', '=', r.kind)
            .where('partner_id', '=', r.partner_id)
            .where('label', '=', r.label)
            // As text: `infinity` has no JavaScript Date.
            .where('bucket', '=', sql<Date>`${r.bucket}::timestamptz`)
            .where('n', '=', '0')
            .execute();
        }
        return rows.reduce((sum, r) => sum + Number(r.folded), 0);
      });
    },
  };
}

export type CounterRepository = ReturnType<typeof createCounterRepository>;
