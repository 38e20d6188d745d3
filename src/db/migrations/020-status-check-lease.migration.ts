import { sql, type Kysely } from 'kysely';

/*
 * One status check of a payment at a time, across instances: whoever asks the ministry (the
 * confirmation job, or a partner's GET /payments/{id}) holds `status_check_until`; a live check
 * presents its own token (`status_check_token`) to let go, and the job its check count. When the
 * last check ended (`status_checked_at`) lets a read answer from it instead of asking again.
 * Nullable with no default: adding them rewrites no row.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE payments
      ADD COLUMN status_check_until timestamptz,
      ADD COLUMN status_check_token uuid,
      ADD COLUMN status_checked_at timestamptz`.execute(db);
}
