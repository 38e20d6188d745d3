import { describe, expect, it } from 'vitest';
import type { DatabaseConnection, Driver } from 'kysely';
import { RequestsFirstPoolDriver } from '../../src/db/requests-first-pool.driver.js';
import { createWorkPriority, type WorkPriority } from '../../src/db/work-priority.js';

/** A pool of `size` connections whose waiters are served in arrival order, as pg's pool serves them. */
function pool(size: number): Driver & { held(): number } {
  let free = size;
  const waiters: (() => void)[] = [];
  const connection = (): DatabaseConnection => ({
    executeQuery: async () => ({ rows: [] }),
    streamQuery: async function* () {
      yield { rows: [] };
    },
  });
  return {
    held: () => size - free,
    init: async () => undefined,
    async acquireConnection() {
      if (free > 0) free--;
      else await new Promise<void>((wake) => waiters.push(wake));
      return connection();
    },
    async releaseConnection() {
      const next = waiters.shift();
      if (next) next();
      else free++;
    },
    beginTransaction: async () => undefined,
    commitTransaction: async () => undefined,
    rollbackTransaction: async () => undefined,
    destroy: async () => undefined,
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

function setup(size: number, backgroundConnections: number, clock = () => 0) {
  const priority = createWorkPriority();
  const inner = pool(size);
  const driver = new RequestsFirstPoolDriver(inner, priority, { connections: size, backgroundConnections, maxBackgroundWaitMs: 100, now: clock });
  return { priority, inner, driver };
}

/** Background work that takes a connection and keeps it until told. */
function holdInBackground(priority: WorkPriority, driver: Driver, got: string[], name: string) {
  let release: () => void = () => undefined;
  const done = priority.background(async () => {
    const connection = await driver.acquireConnection();
    got.push(name);
    await new Promise<void>((resolve) => (release = resolve));
    await driver.releaseConnection(connection);
  });
  return { done, release: () => release() };
}

describe('requests first on a pool of connections', () => {
  it('lets background work use the whole pool while no request is in flight', async () => {
    const { priority, inner, driver } = setup(4, 2);
    const got: string[] = [];
    const jobs = [1, 2, 3, 4].map((n) => holdInBackground(priority, driver, got, `job ${n}`));
    await tick();
    expect(inner.held()).toBe(4);
    jobs.forEach((j) => j.release());
    await Promise.all(jobs.map((j) => j.done));
  });

  it('keeps background work to its share while a request is served, and leaves the rest to requests', async () => {
    const { priority, inner, driver } = setup(4, 2);
    const requestOver = priority.requestStarted();
    const got: string[] = [];
    const jobs = [1, 2, 3, 4].map((n) => holdInBackground(priority, driver, got, `job ${n}`));
    await tick();
    expect(got).toEqual(['job 1', 'job 2']);
    const a = await driver.acquireConnection();
    const b = await driver.acquireConnection();
    expect(inner.held()).toBe(4);
    await driver.releaseConnection(a);
    await driver.releaseConnection(b);
    await tick();
    expect(got).toEqual(['job 1', 'job 2']);
    requestOver();
    await tick();
    expect(got).toEqual(['job 1', 'job 2', 'job 3', 'job 4']);
    jobs.forEach((j) => j.release());
    await Promise.all(jobs.map((j) => j.done));
  });

  it('gives a waiting request the next free connection before waiting background work', async () => {
    const { priority, driver } = setup(2, 2);
    const requestOver = priority.requestStarted();
    const got: string[] = [];
    const first = holdInBackground(priority, driver, got, 'job 1');
    const second = holdInBackground(priority, driver, got, 'job 2');
    await tick();
    const order: string[] = [];
    const request = driver.acquireConnection().then((c) => {
      order.push('request');
      return c;
    });
    const third = holdInBackground(priority, driver, order, 'job 3');
    await tick();
    first.release();
    await first.done;
    const connection = await request;
    await tick();
    expect(order).toEqual(['request']);
    await driver.releaseConnection(connection);
    requestOver();
    await tick();
    expect(order).toEqual(['request', 'job 3']);
    second.release();
    third.release();
    await Promise.all([second.done, third.done]);
  });

  it('keeps background work that finds the pool full out of its queue, so a request arriving later goes first', async () => {
    const { priority, inner, driver } = setup(2, 1);
    const got: string[] = [];
    const jobs = [1, 2, 3].map((n) => holdInBackground(priority, driver, got, `job ${n}`));
    await tick();
    expect(got).toEqual(['job 1', 'job 2']);
    const requestOver = priority.requestStarted();
    const request = driver.acquireConnection().then((c) => {
      got.push('request');
      return c;
    });
    jobs[0]?.release();
    const connection = await request;
    await tick();
    expect(got).toEqual(['job 1', 'job 2', 'request']);
    expect(inner.held()).toBe(2);
    await driver.releaseConnection(connection);
    requestOver();
    await tick();
    expect(got).toEqual(['job 1', 'job 2', 'request', 'job 3']);
    jobs.forEach((j) => j.release());
    await Promise.all(jobs.map((j) => j.done));
  });

  it('gives background work that has had no turn for too long one turn', async () => {
    let clock = 0;
    const { priority, driver } = setup(4, 1, () => clock);
    priority.requestStarted();
    const got: string[] = [];
    const first = holdInBackground(priority, driver, got, 'job 1');
    const second = holdInBackground(priority, driver, got, 'job 2');
    await tick();
    expect(got).toEqual(['job 1']);
    clock = 150;
    await expect.poll(() => got).toEqual(['job 1', 'job 2']);
    first.release();
    second.release();
    await Promise.all([first.done, second.done]);
  });
});
