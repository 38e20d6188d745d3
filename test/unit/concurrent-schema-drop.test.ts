import { describe, expect, it } from 'vitest';
import { isConcurrentSchemaDrop } from '../../src/db/database.js';

/*
 * The migrator's table listing fails with these when another schema is dropped under it (parallel
 * test runs, another service on the database); the migration then runs again. Any other error,
 * and a failed migration of our own, is the operator's to see.
 */
describe('a concurrent schema drop under the migrator’s table listing', () => {
  it.each([
    ['3F000', 'schema "t_1" does not exist'],
    ['42P01', 'relation "t_1.invoices" does not exist'],
    ['42703', 'column "payee_name" of relation "invoices" does not exist'],
  ])('%s (%s) is retried', (code, message) => {
    expect(isConcurrentSchemaDrop(Object.assign(new Error(message), { code }))).toBe(true);
  });

  it.each([['42P07'], ['23505'], ['57P01'], [undefined]])('%s is not', (code) => {
    expect(isConcurrentSchemaDrop(Object.assign(new Error('other'), { code }))).toBe(false);
  });
});
