import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { capturingLogger } from '../helpers/log-capture.js';
import { canRunOwnCluster, createReplicationPrimary, createStandby, type PgCluster } from '../helpers/pg-cluster.js';
import { createDatabase, queryOnce } from '../helpers/pg-query.js';
import { ownInvoice, partnerWithPayment, payOk, type Partner } from '../helpers/api.js';
import { freePorts } from '../walkthrough/walkthrough.js';

/*
 * Read routing against a real streaming replica: a primary cluster of the test's own and a hot
 * standby made from it with pg_basebackup, both on ports of their own. The operator's lists and
 * the partner's reports and events list read from the standby while it keeps up; once its replay
 * is paused while the primary takes writes, they read from the primary (and see those writes)
 * until replay resumes. Nothing is ever promoted: the standby stays in recovery throughout.
 *
 * The standard lag query counts from the last replayed commit whenever the standby holds WAL it
 * has not replayed yet, so a write after a quiet spell can read as a lag above this small bound
 * for a probe or two. Where the standby is meant to keep up, the test therefore waits for a read
 * that ran on the replica rather than assuming the next one does.
 */

const MAX_LAG_MS = 300;
const PROBE_MS = 50;
/** A bound on a hang: replay, a switch of target and a WAL flush each take well under a second. */
const DEADLINE_MS = 15_000;
const POLL = { timeout: DEADLINE_MS, interval: 50 };
const LAGGING_LINE = 'replica lagging: routed reads go to the primary';
const CAUGHT_UP_LINE = 'replica caught up: routed reads go to the replica';
const WARN = 40;
const INFO = 30;

let primary: PgCluster | undefined;
let standby: PgCluster | undefined;
let ctx: TestContext | undefined;
const { logger, lines } = capturingLogger();

/*
 * The counter and the gauge are read from the registry /metrics serves, one metric at a time: a
 * whole scrape also reads its backlog gauges through the routed reads, and would count itself.
 */
async function metricLines(c: TestContext, name: string): Promise<string[]> {
  return (await c.deps.metrics.registry.getSingleMetricAsString(name)).split('\n');
}

interface Routed {
  replica: number;
  primary: number;
}

/** Routed queries so far, by where they ran (`database_routed_reads_total`). */
async function routedReads(c: TestContext): Promise<Routed> {
  const counted = await metricLines(c, 'database_routed_reads_total');
  const count = (target: string) => Number(counted.find((l) => l.startsWith(`database_routed_reads_total{target="${target}"} `))?.split(' ')[1] ?? 0);
  return { replica: count('replica'), primary: count('primary') };
}

/** The last measured replay lag in seconds (`database_replica_lag_seconds`). */
async function lagGauge(c: TestContext): Promise<number | null> {
  const line = (await metricLines(c, 'database_replica_lag_seconds')).find((l) => l.startsWith('database_replica_lag_seconds '));
  return line ? Number(line.split(' ')[1]) : null;
}

/** What `read` added to the routed reads, with its answer. */
async function counted<T>(c: TestContext, read: () => Promise<T>): Promise<{ added: Routed; answer: T }> {
  const before = await routedReads(c);
  const answer = await read();
  const after = await routedReads(c);
  return { added: { replica: after.replica - before.replica, primary: after.primary - before.primary }, answer };
}

/** Runs `read` until one run of it has run all its queries, at least `atLeast`, on the replica; that run's answer. */
async function onReplica<T>(c: TestContext, read: () => Promise<T>, atLeast = 1): Promise<T> {
  let last: { added: Routed; answer: T } | undefined;
  await expect
    .poll(async () => {
      last = await counted(c, read);
      return last.added.primary === 0 && last.added.replica >= atLeast;
    }, POLL)
    .toBe(true);
  return last!.answer;
}

const adminGet = (c: TestContext, url: string) => c.admin.inject({ method: 'GET', url, headers: { authorization: `Bearer ${c.config.adminToken}` } });

/** The payment ids of GET /admin/payments for one partner, in no particular order. */
async function adminPaymentIds(c: TestContext, partnerId: string): Promise<string[]> {
  const res = await adminGet(c, `/admin/payments?partnerId=${partnerId}`);
  expect(res.statusCode, res.body).toBe(200);
  return res
    .json<{ items: { id: string }[] }>()
    .items.map((p) => p.id)
    .sort();
}

/** The test context's schema: the only one on this cluster with the service's tables. */
async function serviceSchema(url: string): Promise<string> {
  const rows = await queryOnce<{ schemaname: string }>(url, "SELECT schemaname FROM pg_tables WHERE tablename = 'payments'");
  expect(rows).toHaveLength(1);
  return rows[0]!.schemaname;
}

/** Whether the standby has replayed the insert of payment `id`. */
async function onStandby(schema: string, id: string): Promise<boolean> {
  const rows = await queryOnce(standby!.url('test'), `SELECT 1 FROM ${schema}.payments WHERE id = $1`, [id]);
  return rows.length === 1;
}

async function inRecovery(cluster: PgCluster): Promise<boolean> {
  const [row] = await queryOnce<{ recovering: boolean }>(cluster.url('test'), 'SELECT pg_is_in_recovery() AS recovering');
  return row?.recovering === true;
}

/** Where the primary has written up to now. */
async function primaryLsn(): Promise<string> {
  const [row] = await queryOnce<{ lsn: string }>(primary!.url('test'), 'SELECT pg_current_wal_lsn()::text AS lsn');
  return row!.lsn;
}

/** Waits until the standby has received (`receive`) or replayed (`replay`) all the primary has written. */
async function standbyHas(what: 'receive' | 'replay'): Promise<void> {
  const written = await primaryLsn();
  const reached = async () => {
    const [r] = await queryOnce<{ done: boolean }>(standby!.url('test'), `SELECT pg_last_wal_${what}_lsn() >= $1::pg_lsn AS done`, [written]);
    return r?.done === true;
  };
  await expect.poll(reached, POLL).toBe(true);
}

/** The router's switch lines from line `from` on. */
const switchesSince = (from: number) => lines.slice(from).filter((l) => l.msg === LAGGING_LINE || l.msg === CAUGHT_UP_LINE);

beforeAll(async () => {
  if (!canRunOwnCluster()) return;
  const [primaryPort, standbyPort] = await freePorts(2);
  primary = await createReplicationPrimary(primaryPort!);
  // Before the base backup, so the standby starts with the database already in it.
  await createDatabase(primary.url('postgres'), 'test');
  // The cluster helper turns synchronous_commit off for speed; a commit then reaches the standby
  // only at the WAL writer's next flush, often cut mid-record, which holds replay behind what was
  // received for up to its delay and reads as lag. A production primary flushes at each commit.
  await queryOnce(primary.url('postgres'), 'ALTER DATABASE test SET synchronous_commit = on');
  standby = await createStandby(primary, standbyPort!);

  ctx = await createTestContext({
    config: { databaseUrl: primary.url('test'), databaseReplicaUrl: standby.url('test'), replicaMaxLagMs: MAX_LAG_MS, replicaProbeMs: PROBE_MS },
    logger,
  });
});

afterAll(async () => {
  // Each step runs even if an earlier one failed; the first failure is reported once all have run.
  const failures: unknown[] = [];
  const steps = [
    () => ctx?.close(),
    () => standby?.destroy(),
    () => primary?.destroy(),
  ];
  for (const step of steps) {
    try {
      await step();
    } catch (err) {
      failures.push(err);
    }
  }
  if (failures.length > 0) throw failures[0];
});

describe.skipIf(!canRunOwnCluster())('read routing to a streaming replica (own primary and hot standby)', () => {
  let partner: Partner;
  let firstPaymentId: string;
  let schema: string;

  it('reads the operator lists, the reports and the events list from the replica while it keeps up; a payment by id is not routed', async () => {
    const c = ctx!;
    expect(await inRecovery(standby!)).toBe(true);
    expect(await inRecovery(primary!)).toBe(false);
    // The router starts on the primary and moves to the replica on its first measurement.
    await expect.poll(() => switchesSince(0)[0]?.msg, POLL).toBe(CAUGHT_UP_LINE);

    const made = await partnerWithPayment(c, 'mof');
    partner = made.partner;
    firstPaymentId = made.payment.id;
    schema = await serviceSchema(primary!.url('test'));
    await expect.poll(() => onStandby(schema, firstPaymentId), POLL).toBe(true);
    await standbyHas('replay');

    const [listed, events, report] = await onReplica(
      c,
      () =>
        Promise.all([
          adminPaymentIds(c, partner.id),
          c.api(partner.apiKey, { method: 'GET', url: '/api/v1/events' }),
          c.api(partner.apiKey, { method: 'GET', url: '/api/v1/reports/payments' }),
        ]),
      3,
    );
    expect(listed).toEqual([firstPaymentId]);
    expect(events.statusCode, events.body).toBe(200);
    expect(report.statusCode, report.body).toBe(200);
    expect(report.json<{ items: { id: string }[] }>().items.map((p) => p.id)).toEqual([firstPaymentId]);

    // The partner's own payment is read on the primary, outside the routing: neither count moves.
    const byId = await counted(c, () => c.api(partner.apiKey, { method: 'GET', url: `/api/v1/payments/${firstPaymentId}` }));
    expect(byId.answer.statusCode, byId.answer.body).toBe(200);
    expect(byId.added).toEqual({ replica: 0, primary: 0 });

    // What the operator's Prometheus sees.
    const scraped = await c.admin.inject({ method: 'GET', url: '/metrics' });
    expect(scraped.statusCode).toBe(200);
    expect(scraped.body).toMatch(/^database_routed_reads_total\{target="replica"\} [1-9]\d*$/m);
    expect(scraped.body).toMatch(/^database_replica_lag_seconds \d+(\.\d+)?$/m);
  });

  it('sends routed reads to the primary while replay is paused and the primary writes on, and back to the replica once replay resumes', async () => {
    const c = ctx!;
    const standbyUrl = standby!.url('test');
    await standbyHas('replay');
    await onReplica(c, () => adminPaymentIds(c, partner.id));
    const from = lines.length;
    await queryOnce(standbyUrl, 'SELECT pg_wal_replay_pause()');
    // A pause is requested, then taken at the next record: until then a write could still be replayed.
    await expect.poll(async () => (await queryOnce<{ state: string }>(standbyUrl, 'SELECT pg_get_wal_replay_pause_state() AS state'))[0]?.state, POLL).toBe('paused');

    const invoice = await ownInvoice(c, partner, 'mof');
    const second = await payOk(c, partner.apiKey, { invoiceId: invoice.id });
    const both = [firstPaymentId, second.id].sort();
    // Paused, the standby's lag only grows: once the router has switched, it stays switched.
    await expect.poll(() => switchesSince(from).at(-1)?.msg, POLL).toBe(LAGGING_LINE);
    expect(await lagGauge(c)).toBeGreaterThanOrEqual(MAX_LAG_MS / 1000);

    const lagging = await counted(c, () => adminPaymentIds(c, partner.id));
    expect(lagging.added.replica).toBe(0);
    expect(lagging.added.primary).toBeGreaterThan(0);
    // The answer holds the write the paused standby has not replayed: it came from the primary.
    expect(lagging.answer).toEqual(both);
    expect(await onStandby(schema, second.id)).toBe(false);

    const resumedAt = lines.length;
    await queryOnce(standbyUrl, 'SELECT pg_wal_replay_resume()');
    await expect.poll(() => switchesSince(resumedAt).some((l) => l.msg === CAUGHT_UP_LINE), POLL).toBe(true);
    await expect.poll(() => onStandby(schema, second.id), POLL).toBe(true);
    expect(await onReplica(c, () => adminPaymentIds(c, partner.id))).toEqual(both);

    // A line per switch, not per probe: the many probes of the pause logged the one warning.
    const switches = switchesSince(from);
    expect(switches[0]).toMatchObject({ msg: LAGGING_LINE, level: WARN });
    expect(switches.some((l) => l.msg === CAUGHT_UP_LINE && l.level === INFO)).toBe(true);
    for (let i = 1; i < switches.length; i++) expect(switches[i]!.msg, `switch ${i} of ${switches.length}`).not.toBe(switches[i - 1]!.msg);

    expect(await inRecovery(standby!)).toBe(true);
  });
});
