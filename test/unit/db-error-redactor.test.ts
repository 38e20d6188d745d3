import { describe, expect, it } from 'vitest';
import { stdSerializers } from 'pino';
import { redactDbError } from '../../src/http/db-error.redactor.js';

/** Shaped like pg's DatabaseError (no import: the fields are what matters to the redactor). */
class DatabaseError extends Error {
  severity = 'ERROR';
  code = '23505';
  routine = '_bt_check_unique';
  constraint = 'devices_pkey';
  table = 'devices';
  detail = 'Key (user_id)=(secret-user) already exists.';
  where = "unnamed portal parameter $1 = 'secret-user'";
  internalQuery = 'select secret-user';
}

describe('redactDbError', () => {
  it('keeps what identifies a PostgreSQL failure and drops values, statement and context', () => {
    const err = new DatabaseError('duplicate key value violates unique constraint "devices_pkey"');
    const out = stdSerializers.err(redactDbError(err) as Error);
    expect(out.type).toBe('DatabaseError');
    expect(out).toMatchObject({ code: '23505', severity: 'ERROR', routine: '_bt_check_unique', constraint: 'devices_pkey', table: 'devices' });
    expect(JSON.stringify(out)).not.toContain('secret-user');
    expect(out.message).toBe(err.message);
    expect(err.detail).toContain('secret-user');
  });

  it('drops PGlite query and params, and a value quoted at the end of the message (also in the stack)', () => {
    const err = Object.assign(new Error('invalid input syntax for type uuid: "secret-id"'), { code: '22P02', query: 'select $1', params: ['secret-id'] });
    const out = stdSerializers.err(redactDbError(err) as Error);
    expect(JSON.stringify(out)).not.toContain('secret-id');
    expect(out.message).toBe('invalid input syntax for type uuid: [redacted]');
    expect(out.code).toBe('22P02');
  });

  it('redacts a database error that is the cause of another, and leaves other errors alone', () => {
    const db = Object.assign(new Error('boom'), { query: 'insert', params: ['secret-cause'] });
    const wrapper = Object.assign(new Error('wrapped', { cause: db }), { detail: 'upstream detail' });
    const out = stdSerializers.err(redactDbError(wrapper) as Error);
    expect(JSON.stringify(out)).not.toContain('secret-cause');
    expect(out.detail).toBe('upstream detail');
    const plain = new TypeError('plain');
    expect(redactDbError(plain)).toBe(plain);
    expect(redactDbError('not an error')).toBe('not an error');
  });
});
