import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { compileOnce, type SlotFn } from '../../src/db/compiled-query.js';
import type { Database } from '../../src/db/db.types.js';
import { columnList } from '../../src/db/table-columns.js';

// Compiling needs no connection: the dummy driver is never asked to run anything here.
const db = new Kysely<Database>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (k) => new PostgresIntrospector(k),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

describe('compileOnce', () => {
  const query = compileOnce((slot: SlotFn<'id' | 'partner'>) =>
    db
      .selectFrom('payments')
      .select('id')
      .where('partner_id', '=', slot<string>('partner'))
      .where('status', '=', 'confirmed')
      .where('id', '=', slot<string>('id')),
  );

  it('binds each value in the place of its slot and keeps the constants', () => {
    const compiled = query({ id: 'p-1', partner: 'partner-1' });
    expect(compiled.sql).toBe('select "id" from "payments" where "partner_id" = $1 and "status" = $2 and "id" = $3');
    expect(compiled.parameters).toEqual(['partner-1', 'confirmed', 'p-1']);
  });

  it('gives every call its own parameters from the same text', () => {
    const first = query({ id: 'a', partner: 'x' });
    const second = query({ id: 'b', partner: 'y' });
    expect(second.sql).toBe(first.sql);
    expect(first.parameters).toEqual(['x', 'confirmed', 'a']);
    expect(second.parameters).toEqual(['y', 'confirmed', 'b']);
  });

  it('compiles to what Kysely builds with the values inline', () => {
    const direct = db.selectFrom('payments').select('id').where('partner_id', '=', 'x').where('status', '=', 'confirmed').where('id', '=', 'a').compile();
    const once = query({ id: 'a', partner: 'x' });
    expect({ sql: once.sql, parameters: once.parameters }).toEqual({ sql: direct.sql, parameters: direct.parameters });
  });
});

describe('columnList', () => {
  // Prepared statements are named by their text, and bench/ceiling/*.sql copies it.
  it.each([undefined, 't'])('compiles to the text of the joined references (alias %s)', (alias) => {
    const columns = ['id', 'partner_id', 'odd"name'];
    const refs = sql.join(columns.map((c) => sql.ref(alias ? `${alias}.${c}` : c)));
    const statement = (list: typeof refs) => sql`SELECT ${list} FROM payments ${sql.raw(alias ?? '')} WHERE id = ${'x'}`.compile(db);
    const fromList = statement(columnList(columns, alias));
    expect(fromList.sql).toBe(statement(refs).sql);
    expect(fromList.parameters).toEqual(['x']);
  });
});
