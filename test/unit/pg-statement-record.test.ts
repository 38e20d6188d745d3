import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { forgetPreparedStatement, statementRecordOf } from '../../src/db/pg-statement-record.js';

describe("pg's record of prepared statements (a library internal the pool relies on)", () => {
  it('is where this pg version keeps it, so a stale statement can be forgotten', () => {
    const client = new pg.Client();
    const record = statementRecordOf(client);
    expect(record).not.toBeNull();
    expect(record?.parsedStatements).toEqual({});
    expect(record?.submittedNamedStatements).toEqual({});
  });

  it('forgets one statement and keeps the others', () => {
    const client = new pg.Client();
    const record = statementRecordOf(client);
    if (!record) throw new Error('pg statement record missing');
    record.parsedStatements.s1 = 'select 1';
    record.parsedStatements.s2 = 'select 2';
    if (record.submittedNamedStatements) record.submittedNamedStatements.s1 = 'select 1';
    forgetPreparedStatement(client, 's1');
    expect(record.parsedStatements).toEqual({ s2: 'select 2' });
    expect(record.submittedNamedStatements).toEqual({});
  });

  it('refuses loudly when the record is gone', () => {
    const client = new pg.Client();
    Object.defineProperty(client, 'connection', { value: {} });
    expect(() => forgetPreparedStatement(client, 's1')).toThrow(/parsedStatements/);
  });
});
