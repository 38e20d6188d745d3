import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createStatementNamer, preparedStatementPool } from '../../src/db/prepared-statement.pool.js';

type Sent = string | { name?: string; text: string; values: unknown[] };

/** PostgreSQL's answer to a prepared statement whose result columns changed under it. */
const staleError = () => Object.assign(new Error('cached plan must not change result type'), { code: '0A000' });

/** A pg client that refuses `staleNames` as stale and, with `aborted`, every further statement. */
function fakeClient(opts: { staleNames: Set<string>; aborted?: boolean }) {
  const sent: Sent[] = [];
  let failed = false;
  const client = {
    async query(q: Sent) {
      sent.push(q);
      if (opts.aborted && failed) throw Object.assign(new Error('current transaction is aborted'), { code: '25P02' });
      if (typeof q !== 'string' && q.name && opts.staleNames.has(q.name)) {
        failed = true;
        throw staleError();
      }
      return { rows: [{ ok: true }], command: 'SELECT', rowCount: 1 };
    },
    release() {},
  };
  const pool = { connect: async () => client, end: async () => {} } as unknown as pg.Pool;
  return { sent, pool };
}

describe('prepared-statement pool', () => {
  const text = 'select * from rolling where id = $1';

  it('prepares a statement refused as stale again under a new name, through pg query configs only', async () => {
    const namer = createStatementNamer({ preparedAfter: 1 });
    const stale = namer.nameFor(text) as string;
    const { sent, pool } = fakeClient({ staleNames: new Set([stale]) });
    const conn = await preparedStatementPool(pool, namer).connect();
    const result = await conn.query(text, [1]);
    expect(result.rows).toEqual([{ ok: true }]);
    const renamed = namer.nameFor(text);
    expect(renamed).not.toBe(stale);
    expect(sent).toEqual([
      { name: stale, text, values: [1] },
      `DEALLOCATE ${stale}`,
      { name: renamed, text, values: [1] },
    ]);
  });

  it('lets the caller see the refusal inside an aborted transaction, and keeps the name for a later try', async () => {
    const namer = createStatementNamer({ preparedAfter: 1 });
    const stale = namer.nameFor(text) as string;
    const { sent, pool } = fakeClient({ staleNames: new Set([stale]), aborted: true });
    const conn = await preparedStatementPool(pool, namer).connect();
    await expect(conn.query(text, [1])).rejects.toThrow(/cached plan must not change result type/);
    expect(sent).toEqual([{ name: stale, text, values: [1] }, `DEALLOCATE ${stale}`]);
    expect(namer.nameFor(text)).toBe(stale);
  });

  it('passes any other error through without a retry', async () => {
    const namer = createStatementNamer({ preparedAfter: 1 });
    const name = namer.nameFor(text) as string;
    const sent: Sent[] = [];
    const client = {
      async query(q: Sent) {
        sent.push(q);
        throw Object.assign(new Error('relation "rolling" does not exist'), { code: '42P01' });
      },
      release() {},
    };
    const pool = { connect: async () => client, end: async () => {} } as unknown as pg.Pool;
    const conn = await preparedStatementPool(pool, namer).connect();
    await expect(conn.query(text, [1])).rejects.toThrow(/does not exist/);
    expect(sent).toEqual([{ name, text, values: [1] }]);
  });
});
