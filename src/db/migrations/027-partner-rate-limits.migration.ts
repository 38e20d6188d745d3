import { sql, type Kysely } from 'kysely';

/*
 * A partner's own rate limits, per second, minute and hour. All three are set together or none
 * is (the partner then uses the RATE_LIMIT_* defaults), so a half-set partner cannot exist.
 * Nullable with no default: adding the columns rewrites no row.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE partners
      ADD COLUMN rate_limit_per_second integer,
      ADD COLUMN rate_limit_per_minute integer,
      ADD COLUMN rate_limit_per_hour integer,
      ADD CONSTRAINT partners_rate_limits_check CHECK (
        (rate_limit_per_second IS NULL AND rate_limit_per_minute IS NULL AND rate_limit_per_hour IS NULL)
        OR (rate_limit_per_second > 0 AND rate_limit_per_minute > 0 AND rate_limit_per_hour > 0)
      )`.execute(db);
}
