import type pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createStatementNamer, preparedStatementPool } from '../../src/db/prepared-statement.pool.js';

afterEach(() => {
  vi.useRealTimers();
});

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

describe('query deadlines', () => {
  /** A pg pool of one client that never answers; it records how the client was released. */
  function silentPool() {
    const released: unknown[] = [];
    const listeners: ((client: unknown) => void)[] = [];
    const client = {
      query: () => new Promise(() => undefined),
      release(err?: unknown) {
        released.push(err);
      },
    };
    let made = false;
    const pool = {
      on: (_event: string, fn: (client: unknown) => void) => listeners.push(fn),
      async connect() {
        if (!made) listeners.forEach((fn) => fn(client));
        made = true;
        return client;
      },
      end: async () => {},
    } as unknown as pg.Pool;
    return { pool, released };
  }

  function health(down = false) {
    const absorbed: unknown[] = [];
    let probes = 0;
    const h = {
      down,
      unresponsive: down,
      outages: 0,
      absorb(err: unknown) {
        absorbed.push(err);
        h.down = true;
        h.unresponsive = true;
        h.outages += 1;
        return true;
      },

      probe: () => void probes++,
      probes: () => probes,
    };
    return { h, absorbed };
  }

  it('fails a query past its deadline, fails anything else asked of that connection at once, and destroys it on release', async () => {
    const { pool, released } = silentPool();
    const { h, absorbed } = health();
    const conn = await preparedStatementPool(pool, createStatementNamer(), { queryTimeoutMs: 50, health: h }).connect();
    await expect(conn.query('SELECT 1', [])).rejects.toThrow(/database query deadline passed/);
    expect(absorbed).toHaveLength(1);
    // Without a timer moving: it is refused before any deadline of its own could pass.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'clearImmediate', 'performance', 'Date'] });
    await expect(conn.query('ROLLBACK', [])).rejects.toThrow(/database query deadline passed/);
    vi.useRealTimers();
    conn.release();
    expect(released).toHaveLength(1);
    expect(released[0]).toBeInstanceOf(Error);
  });

  it('refuses a connection at once while the database is away, and asks for a probe', async () => {
    const { pool } = silentPool();
    const { h } = health(true);
    await expect(preparedStatementPool(pool, createStatementNamer(), { queryTimeoutMs: 50, health: h }).connect()).rejects.toThrow(/database is away/);
    expect(h.probes()).toBe(1);
  });

  it('never hands out again a connection made before the latest outage', async () => {
    const { h } = health();
    // A pool that keeps a client until it is released with an error, then makes a new one.
    const listeners: ((client: unknown) => void)[] = [];
    const destroyed: number[] = [];
    let current: { id: number; query: () => Promise<unknown>; release: (err?: unknown) => void } | null = null;
    let made = 0;
    const pool = {
      on: (_event: string, fn: (client: unknown) => void) => listeners.push(fn),
      async connect() {
        if (!current) {
          const id = ++made;
          const client = { id, query: async () => ({ rows: [{ id }], command: 'SELECT', rowCount: 1 }), release: (err?: unknown) => err && (destroyed.push(id), (current = null)) };
          current = client;
          listeners.forEach((fn) => fn(client));
        }
        return current;
      },
      end: async () => {},
    } as unknown as pg.Pool;
    const prepared = preparedStatementPool(pool, createStatementNamer(), { health: h });
    (await prepared.connect()).release();
    expect(made).toBe(1);
    h.outages += 1;
    const after = await prepared.connect();
    expect(destroyed).toEqual([1]);
    expect(made).toBe(2);
    expect((await after.query('SELECT 1', [])).rows).toEqual([{ id: 2 }]);
  });

  it('gives up every other query in flight once one passes its deadline: they were sent to the same silent server', async () => {
    const { h } = health();
    const listeners: ((client: unknown) => void)[] = [];
    const released: unknown[] = [];
    const pool = {
      on: (_event: string, fn: (client: unknown) => void) => listeners.push(fn),
      async connect() {
        const client = { query: () => new Promise(() => undefined), release: (err?: unknown) => void released.push(err) };
        listeners.forEach((fn) => fn(client));
        return client;
      },
      end: async () => {},
    } as unknown as pg.Pool;
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'clearImmediate', 'performance', 'Date'] });
    const prepared = preparedStatementPool(pool, createStatementNamer(), { queryTimeoutMs: 200, health: h });
    const first = await prepared.connect();
    const firstQuery = first.query('SELECT 1', []);
    const outcomes: string[] = [];
    firstQuery.catch(() => outcomes.push('first given up'));
    await vi.advanceTimersByTimeAsync(150);
    const second = await prepared.connect();
    const secondQuery = second.query('SELECT 2', []);
    secondQuery.catch(() => outcomes.push('second given up'));
    // The first query's deadline passes (noticed within a sweep's tick, 50 ms); the second, 100 ms
    // short of its own, goes with it.
    await vi.advanceTimersByTimeAsync(100);
    expect(outcomes).toEqual(['first given up', 'second given up']);
    await expect(firstQuery).rejects.toThrow(/database query deadline passed/);
    await expect(secondQuery).rejects.toThrow(/database is away/);
    expect(h.unresponsive).toBe(true);
    await expect(prepared.connect()).rejects.toThrow(/database is away/);
    first.release();
    second.release();
    expect(released).toHaveLength(2);
    expect(released.every((err) => err instanceof Error)).toBe(true);
  });

  it('gives up a checkout still waiting for a connection too, and lets go of the connection it gets later', async () => {
    const { h } = health();
    const listeners: ((client: unknown) => void)[] = [];
    const released: unknown[] = [];
    let connects = 0;
    let lateConnection: (client: unknown) => void = () => undefined;
    const pool = {
      on: (_event: string, fn: (client: unknown) => void) => listeners.push(fn),
      connect() {
        connects++;
        const client = { query: () => new Promise(() => undefined), release: (err?: unknown) => void released.push(err ?? 'returned') };
        listeners.forEach((fn) => fn(client));
        // The first checkout gets a connection; the second waits, as behind a full pool.
        return connects === 1 ? Promise.resolve(client) : new Promise((resolve) => (lateConnection = () => resolve(client)));
      },
      end: async () => {},
    } as unknown as pg.Pool;
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'clearImmediate', 'performance', 'Date'] });
    const prepared = preparedStatementPool(pool, createStatementNamer(), { queryTimeoutMs: 200, health: h });
    const first = await prepared.connect();
    const stuck = first.query('SELECT 1', []);
    const outcomes: string[] = [];
    stuck.catch(() => outcomes.push('query given up'));
    await vi.advanceTimersByTimeAsync(120);
    const waiting = prepared.connect();
    waiting.catch(() => outcomes.push('checkout given up'));
    await vi.advanceTimersByTimeAsync(130);
    expect(outcomes).toEqual(['query given up', 'checkout given up']);
    vi.useRealTimers();
    await expect(stuck).rejects.toThrow(/database query deadline passed/);
    await expect(waiting).rejects.toThrow(/database is away/);
    lateConnection(null);
    // It was made before the outage began, so it goes back destroyed rather than kept.
    await expect.poll(() => released.length).toBe(1);
    expect(released[0]).toBeInstanceOf(Error);
  });
});
