import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { FastifyBaseLogger } from 'fastify';
import { lazyChildLoggerFactory } from '../../src/http/request-logger.js';

function capture(level: string) {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { root: pino({ level }, stream) as unknown as FastifyBaseLogger, lines };
}

const child = (root: FastifyBaseLogger, opts: object = {}) => lazyChildLoggerFactory.call(undefined as never, root, { reqId: 'r-1' }, opts, undefined as never);

describe('lazy request logger', () => {
  it('writes nothing below the level and binds the request id to what it writes', async () => {
    const { root, lines } = capture('warn');
    const log = child(root);
    log.info({ a: 1 }, 'quiet');
    log.debug('quieter');
    log.warn({ b: 2 }, 'loud');
    log.error('louder');
    await new Promise((r) => setImmediate(r));
    expect(lines.map((l) => [l.msg, l.reqId])).toEqual([
      ['loud', 'r-1'],
      ['louder', 'r-1'],
    ]);
    expect(lines[0]?.b).toBe(2);
  });

  it('honours a per-route level and reports its level', async () => {
    const { root, lines } = capture('warn');
    const log = child(root, { level: 'info' });
    expect(log.level).toBe('info');
    log.info('route info');
    await new Promise((r) => setImmediate(r));
    expect(lines.map((l) => l.msg)).toEqual(['route info']);
  });

  it('makes grandchildren that keep the request id', async () => {
    const { root, lines } = capture('info');
    child(root).child({ job: 'x' }).info('nested');
    await new Promise((r) => setImmediate(r));
    expect(lines[0]).toMatchObject({ msg: 'nested', reqId: 'r-1', job: 'x' });
  });
});
