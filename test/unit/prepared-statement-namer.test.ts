import { describe, expect, it } from 'vitest';
import { createStatementNamer } from '../../src/db/prepared-statement.pool.js';

describe('statement namer', () => {
  it('names a statement from its second execution on, the same name every time', () => {
    const namer = createStatementNamer();
    const text = 'select * from payments where id = $1';
    expect(namer.nameFor(text)).toBeUndefined();
    const name = namer.nameFor(text);
    expect(name).toMatch(/^gpc_[0-9a-f]{24}$/);
    expect(namer.nameFor(text)).toBe(name);
    expect(namer.nameFor('select * from payments where id = $2')).toBeUndefined();
  });

  it('gives different texts different names', () => {
    const namer = createStatementNamer({ preparedAfter: 1 });
    const a = namer.nameFor('select 1');
    const b = namer.nameFor('select 2');
    expect(a).toBeDefined();
    expect(b).toBeDefined();
    expect(a).not.toBe(b);
  });

  it('leaves DDL, transaction control and other statements unnamed', () => {
    const namer = createStatementNamer({ preparedAfter: 1 });
    for (const text of ['create table t (id int)', 'begin', 'commit', 'set local lock_timeout = 1000', 'vacuum']) {
      expect(namer.nameFor(text)).toBeUndefined();
      expect(namer.nameFor(text)).toBeUndefined();
    }
    expect(namer.nameFor('  WITH x AS (SELECT 1) SELECT * FROM x')).toBeDefined();
    expect(namer.nameFor('INSERT INTO t VALUES ($1)')).toBeDefined();
  });

  it('stops naming new texts at the cap and keeps the names it gave', () => {
    const namer = createStatementNamer({ preparedAfter: 1, maxStatements: 2 });
    const first = namer.nameFor('select 1');
    namer.nameFor('select 2');
    expect(namer.nameFor('select 3')).toBeUndefined();
    expect(namer.nameFor('select 1')).toBe(first);
  });
});

describe('statement namer, after PostgreSQL refused a prepared statement as stale', () => {
  it('gives the text a name no connection has prepared, and keeps giving it', () => {
    const namer = createStatementNamer({ preparedAfter: 1 });
    const text = 'select * from payments where id = $1';
    const stale = namer.nameFor(text) as string;
    const renamed = namer.rename(text, stale);
    expect(renamed).not.toBe(stale);
    expect(renamed.startsWith(stale)).toBe(true);
    expect(namer.nameFor(text)).toBe(renamed);
    const again = namer.rename(text, renamed);
    expect(again).not.toBe(renamed);
    expect(again).toMatch(/^gpc_[0-9a-f]{24}_r\d+$/);
  });

  it('answers a second connection refused on the old name with the name the first one chose', () => {
    const namer = createStatementNamer({ preparedAfter: 1 });
    const text = 'select 1';
    const stale = namer.nameFor(text) as string;
    const renamed = namer.rename(text, stale);
    expect(namer.rename(text, stale)).toBe(renamed);
  });
});
