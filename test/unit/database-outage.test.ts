import { createServer, type AddressInfo, type Socket } from 'node:net';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { isConnectionEnd, isDatabaseUnavailable, isDatabaseUnresponsive } from '../../src/db/pg-error.js';
import { createDatabaseOutage } from '../../src/db/database-outage.monitor.js';
import { startJobs, type Job } from '../../src/work/job-runner.js';

function pgError(code: string, message = 'x'): Error {
  return Object.assign(new Error(message), { code });
}

function recordingLog() {
  const lines: { level: string; msg: string }[] = [];
  const at = (level: string) => (_obj: object, msg?: string) => void lines.push({ level, msg: msg ?? '' });
  return { log: { info: at('info'), warn: at('warn'), error: at('error') }, lines };
}

describe('isDatabaseUnavailable', () => {
  it.each([
    ['a terminated backend', pgError('57P01', 'terminating connection due to administrator command')],
    ['a server starting up', pgError('57P03', 'the database system is starting up')],
    ['a connection exception', pgError('08006')],
    ['no connection slot', pgError('53300')],
    ['a read-only server after a failover', pgError('25006')],
    ['a refused connection', pgError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432')],
    ['a reset connection', pgError('ECONNRESET', 'read ECONNRESET')],
    ['a lost connection', new Error('Connection terminated unexpectedly')],
    ['a pool that waited too long', new Error('timeout exceeded when trying to connect')],
    ['a client already broken', new Error('Client has encountered a connection error and is not queryable')],
    ['a transaction left idle past the server\'s limit', pgError('25P03', 'terminating connection due to idle-in-transaction timeout')],
    ['a session left idle past the server\'s limit', pgError('57P05', 'terminating connection due to idle-session timeout')],
    ['a wrapped cause', new Error('submit failed', { cause: pgError('57P01') })],
    ['every address refused', new AggregateError([pgError('ECONNREFUSED'), pgError('ECONNREFUSED')])],
  ])('is true for %s', (_name, err) => {
    expect(isDatabaseUnavailable(err)).toBe(true);
  });

  it.each([
    ['a unique violation', pgError('23505')],
    ['a syntax error', pgError('42601')],
    ['a serialization failure', pgError('40001')],
    ['an invalid uuid', pgError('22P02')],
    ['a plain error', new Error('boom')],
    ['not an error', 'Connection terminated'],
    ['nothing', undefined],
  ])('is false for %s', (_name, err) => {
    expect(isDatabaseUnavailable(err)).toBe(false);
  });
});

describe('isConnectionEnd', () => {
  it.each([
    ['an operator\'s kill', pgError('57P01', 'terminating connection due to administrator command')],
    ['the server\'s idle limit on a transaction', pgError('25P03')],
    ['a reset socket', pgError('ECONNRESET', 'read ECONNRESET')],
    ['a connection failure on an open connection', pgError('08006')],
    ['a connection that ended', new Error('Connection terminated unexpectedly')],
    ['a client pg already found broken', new Error('Client has encountered a connection error and is not queryable')],
    ['a wrapped cause', new Error('submit failed', { cause: pgError('57P01') })],
  ])('is true for %s: one connection ended, which says nothing yet of the others', (_name, err) => {
    expect(isDatabaseUnavailable(err)).toBe(true);
    expect(isConnectionEnd(err)).toBe(true);
  });

  it.each([
    ['a refused connection', pgError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432')],
    ['a server starting up', pgError('57P03')],
    ['no connection slot', pgError('53300')],
    ['a connection that could not be made', pgError('08001')],
    ['a read-only server after a failover', pgError('25006')],
    ['a query past its deadline', new Error('database query deadline passed: no answer within 10 ms')],
    ['a connection that never answered', new Error('Connection terminated due to connection timeout')],
    ['a wait for a pooled connection', new Error('timeout exceeded when trying to connect')],
  ])('is false for %s: that already says the database is away', (_name, err) => {
    expect(isDatabaseUnavailable(err)).toBe(true);
    expect(isConnectionEnd(err)).toBe(false);
  });
});

describe('isDatabaseUnresponsive', () => {
  it('tells a database that stopped answering from one that refused or closed', () => {
    expect(isDatabaseUnresponsive(new Error('database query deadline passed: no answer within 10000 ms'))).toBe(true);
    expect(isDatabaseUnresponsive(new Error('timeout exceeded when trying to connect'))).toBe(true);
    expect(isDatabaseUnresponsive(pgError('57014', 'canceling statement due to statement timeout'))).toBe(true);
    expect(isDatabaseUnresponsive(pgError('57P01'))).toBe(false);
    expect(isDatabaseUnresponsive(pgError('ECONNREFUSED'))).toBe(false);
    expect(isDatabaseUnresponsive(new Error('Connection terminated unexpectedly'))).toBe(false);
  });

  it("knows pg's own error for a new connection that never answered, and for a wait for a pooled one", async () => {
    // A server that takes the socket and never says a word, as a silenced network does.
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    const pool = new pg.Pool({ host: '127.0.0.1', port, user: 'x', database: 'x', max: 1, connectionTimeoutMillis: 100 });
    // A client torn down after its timeout may still report it: unheard, it would end the test process.
    pool.on('error', () => undefined);
    try {
      // With one connection allowed, the first checkout makes it and the second waits for it.
      const failures = await Promise.all([pool.connect(), pool.connect()].map((c) => c.then(() => null, (err: unknown) => err)));
      expect(new Set(failures.map(String)).size, failures.map(String).join(' | ')).toBe(2);
      for (const err of failures) {
        expect(err).toBeInstanceOf(Error);
        expect(isDatabaseUnresponsive(err), String(err)).toBe(true);
        expect(isDatabaseUnavailable(err), String(err)).toBe(true);
      }
    } finally {
      await pool.end().catch(() => undefined);
      sockets.forEach((s) => s.destroy());
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('makes the outage refuse at once only while the database is unresponsive', () => {
    const { log } = recordingLog();
    const outage = createDatabaseOutage(log);
    outage.absorb(pgError('57P01'));
    expect([outage.down, outage.unresponsive]).toEqual([true, false]);
    outage.absorb(new Error('database query deadline passed: no answer within 10 ms'));
    expect([outage.down, outage.unresponsive]).toEqual([true, true]);
    outage.recovered();
    expect([outage.down, outage.unresponsive]).toEqual([false, false]);
  });
});

describe('database outage', () => {
  it('logs an outage once when it starts and once when it ends, and ignores other errors', () => {
    const { log, lines } = recordingLog();
    const changes: boolean[] = [];
    const outage = createDatabaseOutage(log, (down) => changes.push(down));
    expect(outage.absorb(pgError('23505'))).toBe(false);
    expect(outage.down).toBe(false);
    for (let i = 0; i < 5; i++) expect(outage.absorb(pgError('57P01'))).toBe(true);
    expect(outage.down).toBe(true);
    outage.recovered();
    outage.recovered();
    expect(outage.down).toBe(false);
    expect(lines.map((l) => l.level)).toEqual(['warn', 'info']);
    expect(changes).toEqual([true, false]);
  });
});

describe('database outage after a connection ended', () => {
  const OUTAGE = 'database unavailable: background work paused, requests that need it answer 503 until it is back';
  const ENDED = 'database connection ended; the database still answers, so only that connection is gone';

  function outageWithPing(answer: () => Promise<boolean>) {
    const { log, lines } = recordingLog();
    let pings = 0;
    const outage = createDatabaseOutage(log, undefined, () => {
      pings++;
      return answer();
    });
    return { outage, lines, pings: () => pings };
  }

  it('asks a new connection first, and begins no outage when the database answers it', async () => {
    const { outage, lines, pings } = outageWithPing(async () => true);
    expect(outage.absorb(pgError('25P03', 'terminating connection due to idle-in-transaction timeout'))).toBe(true);
    expect(outage.down).toBe(false);
    await expect.poll(() => lines.length).toBe(1);
    expect(lines).toEqual([{ level: 'warn', msg: ENDED }]);
    expect(pings()).toBe(1);
    expect([outage.down, outage.outages]).toEqual([false, 0]);
  });

  it('begins the outage once the new connection fails too, with one line', async () => {
    const { outage, lines } = outageWithPing(async () => false);
    outage.absorb(new Error('Connection terminated unexpectedly'));
    await expect.poll(() => outage.down).toBe(true);
    expect(lines).toEqual([{ level: 'warn', msg: OUTAGE }]);
    expect(outage.outages).toBe(1);
  });

  it('takes a ping that throws for a database that is away', async () => {
    const { outage } = outageWithPing(() => Promise.reject(new Error('no')));
    outage.absorb(pgError('57P01'));
    await expect.poll(() => outage.down).toBe(true);
  });

  it('asks once for every connection a single event ended, however many report it', async () => {
    let answer: (up: boolean) => void = () => undefined;
    const { outage, lines, pings } = outageWithPing(() => new Promise<boolean>((resolve) => (answer = resolve)));
    for (let i = 0; i < 5; i++) expect(outage.absorb(pgError('57P01'))).toBe(true);
    expect(pings()).toBe(1);
    answer(true);
    await expect.poll(() => lines.length).toBe(1);
    expect(lines[0]?.msg).toBe(ENDED);
    expect(outage.down).toBe(false);
  });

  it('begins the outage at once, without asking, when a connection could not be made or did not answer', () => {
    for (const err of [pgError('ECONNREFUSED'), new Error('database query deadline passed: no answer within 10 ms')]) {
      const { outage, lines, pings } = outageWithPing(async () => true);
      expect(outage.absorb(err)).toBe(true);
      expect(outage.down).toBe(true);
      expect(pings()).toBe(0);
      expect(lines.map((l) => l.msg)).toEqual([OUTAGE]);
    }
  });

  it("leaves a query on a client pg already found broken to that client's own error", () => {
    const { outage, lines, pings } = outageWithPing(async () => false);
    expect(outage.absorb(new Error('Client has encountered a connection error and is not queryable'))).toBe(true);
    expect([outage.down, pings(), lines.length]).toEqual([false, 0, 0]);
  });
});

describe('job runner during an outage', () => {
  it('starts no pass while the database is away, probes it, and resumes once it answers', async () => {
    const { log, lines } = recordingLog();
    let passes = 0;
    let failing = true;
    let databaseUp = false;
    let probes = 0;
    const outage = createDatabaseOutage(log, undefined, async () => {
      probes++;
      return databaseUp;
    });
    const job: Job = {
      name: 'test',
      intervalMs: 5,
      async run() {
        passes++;
        if (failing) throw pgError('ECONNREFUSED');
      },
    };
    const running = startJobs([job], log, { outage });
    try {
      await expect.poll(() => outage.down).toBe(true);
      const passesWhileDown = passes;
      await expect.poll(() => probes).toBeGreaterThanOrEqual(1);
      // Ticks keep coming every 5 ms; none of them runs the job until a probe finds the database.
      expect(passes).toBe(passesWhileDown);
      failing = false;
      databaseUp = true;
      await expect.poll(() => passes, { timeout: 5000 }).toBeGreaterThan(passesWhileDown);
      expect(outage.down).toBe(false);
    } finally {
      await running.stop();
    }
    expect(lines.map((l) => l.msg)).toEqual([
      'database unavailable: background work paused, requests that need it answer 503 until it is back',
      'database available again: background work resumed',
    ]);
  });

  it('logs a pass that fails for another reason as a job error', async () => {
    const { log, lines } = recordingLog();
    const outage = createDatabaseOutage(log, undefined, async () => true);
    const job: Job = { name: 'broken', intervalMs: 5, run: async () => Promise.reject(new Error('bug')) };
    const running = startJobs([job], log, { outage });
    try {
      await expect.poll(() => lines.length).toBeGreaterThan(0);
    } finally {
      await running.stop();
    }
    expect(outage.down).toBe(false);
    expect(lines[0]).toEqual({ level: 'error', msg: 'job pass failed' });
  });
});
