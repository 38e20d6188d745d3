import { describe, expect, it } from 'vitest';
import type { DatabaseConnection, Driver } from 'kysely';
import { RequestsFirstDriver } from '../../src/db/requests-first.driver.js';
import { createWorkPriority } from '../../src/db/work-priority.js';

/** One connection, as the embedded database has; the gate in front of it is what is under test. */
function oneConnection(): Driver {
  const connection: DatabaseConnection = {
    executeQuery: async () => ({ rows: [] }),
    streamQuery: async function* () {
      yield { rows: [] };
    },
  };
  return {
    init: async () => undefined,
    acquireConnection: async () => connection,
    beginTransaction: async () => undefined,
    commitTransaction: async () => undefined,
    rollbackTransaction: async () => undefined,
    releaseConnection: async () => undefined,
    destroy: async () => undefined,
  };
}

/** Takes the connection, notes its turn in `order`, and gives it back. */
function user(driver: RequestsFirstDriver, order: string[]) {
  return async (name: string) => {
    const conn = await driver.acquireConnection();
    order.push(name);
    await driver.releaseConnection(conn);
  };
}

describe('requests first on one connection', () => {
  it('hands the connection to a waiting request before background work that queued earlier', async () => {
    const priority = createWorkPriority();
    const driver = new RequestsFirstDriver(oneConnection(), priority, { maxBackgroundWaitMs: 1000, now: () => 0 });
    const order: string[] = [];
    const use = user(driver, order);
    const holder = await driver.acquireConnection();
    const queued = [priority.background(() => use('job 1')), priority.background(() => use('job 2')), use('request 1'), use('request 2')];
    // Background work takes one turn of the event loop before it queues.
    await new Promise((r) => setImmediate(r));
    await driver.releaseConnection(holder);
    await Promise.all(queued);
    expect(order).toEqual(['request 1', 'request 2', 'job 1', 'job 2']);
  });

  it('gives background work that has had no turn for too long one turn, then requests again', async () => {
    const priority = createWorkPriority();
    let clock = 0;
    const driver = new RequestsFirstDriver(oneConnection(), priority, { maxBackgroundWaitMs: 100, now: () => clock });
    const order: string[] = [];
    const use = user(driver, order);
    const holder = await driver.acquireConnection();
    const queued = [priority.background(() => use('job 1')), priority.background(() => use('job 2')), use('request 1'), use('request 2')];
    // Background work takes one turn of the event loop before it queues.
    await new Promise((r) => setImmediate(r));
    clock = 150;
    await driver.releaseConnection(holder);
    await Promise.all(queued);
    // One background turn, then the requests, then the rest of the background work.
    expect(order).toEqual(['job 1', 'request 1', 'request 2', 'job 2']);
  });

  it('lets nobody in between a release and the waiter it wakes', async () => {
    const priority = createWorkPriority();
    const driver = new RequestsFirstDriver(oneConnection(), priority, { maxBackgroundWaitMs: 1000 });
    let inside = 0;
    let most = 0;
    const use = async () => {
      const conn = await driver.acquireConnection();
      inside++;
      most = Math.max(most, inside);
      await new Promise((r) => setTimeout(r, 1));
      inside--;
      await driver.releaseConnection(conn);
    };
    await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? priority.background(use) : use())));
    expect(most).toBe(1);
  });
});

describe('background work between requests', () => {
  it('waits while a request is being served, even with the connection free, and goes once none is', async () => {
    const priority = createWorkPriority();
    const driver = new RequestsFirstDriver(oneConnection(), priority, { maxBackgroundWaitMs: 60_000 });
    const order: string[] = [];
    const use = user(driver, order);
    const done = priority.requestStarted();
    const job = priority.background(() => use('job'));
    // Background work takes one turn of the event loop before it would take the connection: a
    // turn after that one, it still has not.
    for (let turn = 0; turn < 2; turn++) await new Promise((r) => setImmediate(r));
    expect(order).toEqual([]);
    await use('request');
    expect(order).toEqual(['request']);
    done();
    await job;
    expect(order).toEqual(['request', 'job']);
  });

  it('takes a turn anyway once it has waited maxBackgroundWaitMs behind requests that never end', async () => {
    const priority = createWorkPriority();
    const driver = new RequestsFirstDriver(oneConnection(), priority, { maxBackgroundWaitMs: 20 });
    const order: string[] = [];
    priority.requestStarted();
    await priority.background(() => user(driver, order)('job'));
    expect(order).toEqual(['job']);
  });

  it('lets a request that arrives from the event loop in before a backlog of background statements runs out', async () => {
    const priority = createWorkPriority();
    const driver = new RequestsFirstDriver(oneConnection(), priority, { maxBackgroundWaitMs: 60_000 });
    const order: string[] = [];
    const use = user(driver, order);
    // Each statement of the embedded database resolves in a microtask; a chain of them must still
    // let the event loop read a socket between two of them.
    const backlog = priority.background(async () => {
      for (let i = 0; i < 50; i++) await use('job');
    });
    const request = new Promise<void>((resolve, reject) =>
      setImmediate(() => {
        const done = priority.requestStarted();
        use('request').then(done).then(resolve, reject);
      }),
    );
    await Promise.all([backlog, request]);
    expect(order).toHaveLength(51);
    expect(order.indexOf('request')).toBeLessThan(5);
  });

  it('counts a request once however often it ends', () => {
    const priority = createWorkPriority();
    const done = priority.requestStarted();
    priority.requestStarted();
    done();
    done();
    expect(priority.requestsInFlight()).toBe(1);
  });
});
