import { sql, type Kysely } from 'kysely';

/**
 * Keys issued before this release stored as their "prefix" everything up to the last `_` of the
 * key, and the random part may itself contain `_`, so some stored prefixes held nearly the whole
 * key. Cut every stored prefix back to the environment tag and 4 characters.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    UPDATE api_keys
    SET key_prefix = substring(key_prefix from '^(gpk_(?:sandbox|live)_.{0,4})')
    WHERE key_prefix ~ '^gpk_(sandbox|live)_.{5,}'
  `.execute(db);
}
