import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createPartnerKey, serviceEnv, startApiProcess, type ApiProcess } from '../helpers/api-process.js';
import { createArchivingCluster, type ArchivingCluster } from '../helpers/pg-archive.js';
import { canRunOwnCluster } from '../helpers/pg-cluster.js';
import { queryOnce } from '../helpers/pg-query.js';
import { checkInvariants, type RunSql } from '../helpers/invariants.js';
import { startSimulatorProcess, type SimulatorProcess } from '../helpers/simulator-process.js';
import { startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { invoiceFixture } from '../helpers/fixtures.js';
import { runCli } from '../helpers/cli.js';
import { freePorts } from '../walkthrough/walkthrough.js';
import { financeDayOf } from '../../src/domain/finance-day.js';
import type { FixtureFile } from '../../simulator/fixtures.schema.js';

/**
 * A restore drill: the service runs on a PostgreSQL cluster of this test's own that archives its
 * WAL continuously. After a base backup, payments are confirmed, a restore point is recorded, and
 * more payments are confirmed after it; then the cluster is destroyed and restored from the base
 * backup and the archive to the restore point. On the restored database, the service must hold
 * every payment confirmed before the point, as confirmed, and none after it; the books must hold;
 * and the day's reconciliation must match the payments kept and report the ones lost, which the
 * ministry has, as payments unknown here.
 */
const DB = 'restore';
const ADMIN_TOKEN = 'restore-admin-token';
const REGISTER = '9900997';
const RESTORE_POINT = 'drill';
/** The first batch, paid in waves as a day's traffic would be, before the restore point. */
const WAVES = 3;
const PER_WAVE = 4;
const BEFORE = WAVES * PER_WAVE;
/** Paid after the restore point: what the restore loses. */
const AFTER = 6;
/** Small, so segments reach the archive within the drill; the point and the end are archived by an explicit switch. */
const ARCHIVE_TIMEOUT_S = 5;
const WAL_SEGMENT_MB = 1;
const HANG_MS = 30_000;

interface Paid {
  id: string;
  refNum: string;
  amount: number;
  /** When the ministry confirmed it: its finance day is the day its settlement lists it on. */
  confirmedAt: string;
}

let archive: ArchivingCluster | undefined;
let simulator: SimulatorProcess | undefined;
let receiver: WebhookReceiver | undefined;
let service: ApiProcess | undefined;
let apiPort: number;
let adminPort: number;

const invoiceOf = (i: number) =>
  invoiceFixture((['mof', 'etax', 'police'] as const)[i % 3] ?? 'mof', `PITR-${i}`, { amount: 6000 + i, payer: { register: REGISTER, name: 'Restore' } });

function fixtures(): FixtureFile {
  return { invoices: Array.from({ length: BEFORE + AFTER }, (_, i) => invoiceOf(i)) };
}

async function startService(name: string): Promise<ApiProcess> {
  const cluster = archive?.cluster;
  if (!cluster || !simulator) throw new Error('the cluster and the simulator start first');
  const env = serviceEnv({ databaseUrl: cluster.url(DB), port: apiPort, adminPort, adminToken: ADMIN_TOKEN, ministryUrl: simulator.url });
  return startApiProcess(name, env, `http://127.0.0.1:${apiPort}/api/v1/health/ready`);
}

async function call(key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`http://127.0.0.1:${apiPort}/api/v1${path}`, {
    method,
    headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(HANG_MS),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** Pays each invoice, has the ministry approve it and waits until the service has it confirmed. */
async function payAndConfirm(apiKey: string, invoiceIds: Map<number, string>, indexes: number[]): Promise<Paid[]> {
  return Promise.all(
    indexes.map(async (i) => {
      const invoice = invoiceOf(i);
      const created = await call(apiKey, 'POST', '/payments', { invoiceId: invoiceIds.get(invoice.amount) }, { 'x-idempotency-key': randomUUID() });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const id = created.body.id as string;
      const approved = await vi.waitFor(
        async () => {
          const res = await fetch(`${simulator?.url}/__control/approve`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ refNum: invoice.refNum, source: invoice.source }),
          });
          if (!res.ok) throw new Error(`approving ${invoice.refNum}: HTTP ${res.status}`);
          return ((await res.json()) as { approved: { paymentId: string; confirmedAt: string } }).approved;
        },
        { timeout: HANG_MS, interval: 100 },
      );
      expect(approved.paymentId).toBe(id);
      await expect.poll(async () => (await call(apiKey, 'GET', `/payments/${id}`)).body.status, { timeout: HANG_MS, interval: 100 }).toBe('confirmed');
      return { id, refNum: invoice.refNum, amount: invoice.amount, confirmedAt: approved.confirmedAt };
    }),
  );
}

/** The ids of the payments whose `payment.confirmed` the receiver got. */
function confirmedDelivered(): string[] {
  return (receiver?.received ?? [])
    .map((r) => JSON.parse(r.body) as { event: string; data: { id: string } })
    .filter((m) => m.event === 'payment.confirmed')
    .map((m) => m.data.id);
}

beforeAll(async () => {
  if (!canRunOwnCluster()) return;
  const [pgPort = 0, simPort = 0, api = 0, admin = 0] = await freePorts(4);
  apiPort = api;
  adminPort = admin;
  archive = await createArchivingCluster(pgPort, { archiveTimeoutS: ARCHIVE_TIMEOUT_S, walSegmentMb: WAL_SEGMENT_MB });
  await queryOnce(archive.cluster.url('postgres'), `CREATE DATABASE ${DB}`);
  // Payments are approved by the drill itself, so each batch is confirmed before it goes on.
  simulator = await startSimulatorProcess('restore-simulator', { port: simPort, fixtures: fixtures(), autoApproveMs: 0 });
  receiver = await startReceiver();
  service = await startService('restore-api-1');
}, 90_000);

afterAll(async () => {
  await service?.stop();
  await simulator?.stop();
  await receiver?.close();
  await archive?.dispose();
}, 60_000);

describe.skipIf(!canRunOwnCluster())('restore drill (own PostgreSQL cluster with WAL archiving)', () => {
  it('restored to a restore point from a base backup and the WAL archive: the payments before it are confirmed, the ones after it unknown, the books hold, and the reconciliation reports the lost ones', async () => {
    if (!archive || !receiver) throw new Error('beforeAll did not set up the drill');
    const apiKey = await createPartnerKey(adminPort, ADMIN_TOKEN, 'Restore Bank');
    const hook = await call(apiKey, 'POST', '/webhooks', { url: receiver.url, secret: 'restore-drill-secret-0123', events: ['payment.confirmed'] });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    const search = await call(apiKey, 'GET', `/invoices?ttd=${REGISTER}`);
    expect(search.status, JSON.stringify(search.body)).toBe(200);
    const invoiceIds = new Map((search.body.invoices as { id: string; amount: number }[]).map((i) => [i.amount, i.id]));
    expect(invoiceIds.size).toBe(BEFORE + AFTER);

    // The base backup comes first: everything after it is in the archive only.
    const backup = await archive.baseBackup();

    const before: Paid[] = [];
    for (let wave = 0; wave < WAVES; wave++) {
      before.push(...(await payAndConfirm(apiKey, invoiceIds, Array.from({ length: PER_WAVE }, (_, n) => wave * PER_WAVE + n))));
    }
    const restorePointAt = new Date();
    await queryOnce(archive.cluster.url('postgres'), `SELECT pg_create_restore_point('${RESTORE_POINT}')`);
    const pointSegment = await archive.switchWal();

    const after = await payAndConfirm(apiKey, invoiceIds, Array.from({ length: AFTER }, (_, n) => BEFORE + n));
    // The partner was told of every payment the restore is about to lose.
    await expect.poll(() => after.every((p) => confirmedDelivered().includes(p.id)), { timeout: HANG_MS, interval: 100 }).toBe(true);
    // The WAL of the second batch is archived too: the recovery must stop at the point, not run out of WAL.
    const lastSegment = await archive.switchWal();
    expect(lastSegment > pointSegment, `${lastSegment} after ${pointSegment}`).toBe(true);
    const archived = archive.archived();
    const deliveredBeforeDestroy = receiver.received.length;

    await service?.stop();
    service = undefined;
    const destroyedAt = Date.now();
    await archive.destroyCluster();
    const restored = await archive.restore(backup, { name: RESTORE_POINT });
    const recoveredAt = Date.now();
    service = await startService('restore-api-2');
    const readyAt = Date.now();

    for (const p of before) {
      const got = await call(apiKey, 'GET', `/payments/${p.id}`);
      expect(got.status, `${p.id} (before the point)`).toBe(200);
      expect(got.body.status, `${p.id} (before the point)`).toBe('confirmed');
    }
    for (const p of after) {
      expect((await call(apiKey, 'GET', `/payments/${p.id}`)).status, `${p.id} (after the point)`).toBe(404);
    }

    // The server stopped because it reached the point, with the later WAL at hand in the archive.
    expect(readFileSync(join(restored.dir, 'server.log'), 'utf8')).toContain(`recovery stopping at restore point "${RESTORE_POINT}"`);

    const client = new pg.Client({ connectionString: restored.url(DB) });
    await client.connect();
    try {
      const run: RunSql = async (text) => (await client.query<Record<string, unknown>>(text)).rows;
      expect(await checkInvariants(run)).toEqual([]);
    } finally {
      await client.end();
    }

    // The operator's reconciliation of each finance day the payments fall on (one, unless the drill straddles midnight in Ulaanbaatar).
    const cli = { adminUrl: `http://127.0.0.1:${adminPort}`, adminToken: ADMIN_TOKEN };
    const days = [...new Set([...before, ...after].map((p) => financeDayOf(new Date(p.confirmedAt))))].sort();
    const onDay = (paid: Paid[], day: string) => paid.filter((p) => financeDayOf(new Date(p.confirmedAt)) === day);
    const runs: { day: string; matched: number; autoConfirmed: number; discrepancies: number }[] = [];
    for (const day of days) {
      const ran = await runCli(['reconcile', 'run', '--day', day], cli);
      expect(ran.code, ran.stderr).toBe(0);
      const result = JSON.parse(ran.stdout) as { status: string; matched: number; autoConfirmed: number; discrepancies: number };
      expect(result.status).toBe('completed');
      // Every payment kept is matched with the ministry's settlement: none lost, none to confirm.
      expect(result.matched).toBe(onDay(before, day).length);
      expect(result.autoConfirmed).toBe(0);
      expect(result.discrepancies).toBe(onDay(after, day).length);
      runs.push({ day, matched: result.matched, autoConfirmed: result.autoConfirmed, discrepancies: result.discrepancies });

      const listed = await runCli(['reconcile', 'discrepancies', '--status', 'open', '--day', day], cli);
      expect(listed.code, listed.stderr).toBe(0);
      const found = (JSON.parse(listed.stdout) as { items: { kind: string; paymentId: string; refNum: string; partnerId: string | null; localAmount: number | null; ministryAmount: number | null }[] }).items;
      const byId = (xs: { paymentId: string }[]) => [...xs].sort((x, y) => x.paymentId.localeCompare(y.paymentId));
      // The ministry has them, this service does not know them: the payments the restore lost, and only those.
      expect(byId(found.map(({ kind, paymentId, refNum, partnerId, localAmount, ministryAmount }) => ({ kind, paymentId, refNum, partnerId, localAmount, ministryAmount })))).toEqual(
        byId(onDay(after, day).map((p) => ({ kind: 'missing_locally', paymentId: p.id, refNum: p.refNum, partnerId: null, localAmount: null, ministryAmount: p.amount }))),
      );
    }

    // A partner pays a lost payment's invoice again: its stored copy here is still open, but the
    // ministry has it paid and refuses, so nobody pays twice.
    const lost = after[0] as Paid;
    const again = await call(apiKey, 'POST', '/payments', { invoiceId: invoiceIds.get(lost.amount) }, { 'x-idempotency-key': randomUUID() });
    expect(again.status, JSON.stringify(again.body)).toBe(422);
    const atMinistry = (await (await fetch(`${simulator?.url}/__control/payments`)).json()) as { payments: { paymentId: string; refNum: string; status: string }[] };
    expect(atMinistry.payments.filter((p) => p.refNum === lost.refNum).map((p) => ({ id: p.paymentId, status: p.status }))).toEqual([{ id: lost.id, status: 'confirmed' }]);

    // The restored outbox sends what it had not recorded as delivered at the point: events of
    // payments before it, each one a repeat (the same webhook-id) the partner deduplicates.
    await expect.poll(async () => (await queryOnce<{ n: string }>(restored.url(DB), `SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'`))[0]?.n, { timeout: HANG_MS, interval: 200 }).toBe('0');
    const seenBefore = new Set(receiver.received.slice(0, deliveredBeforeDestroy).map((r) => r.headers['webhook-id']));
    const beforeIds = new Set(before.map((p) => p.id));
    const sentAfterRestore = receiver.received.slice(deliveredBeforeDestroy).map((r) => ({ webhookId: r.headers['webhook-id'], paymentId: (JSON.parse(r.body) as { data: { id: string } }).data.id }));
    expect(sentAfterRestore.filter((d) => !seenBefore.has(d.webhookId) || !beforeIds.has(d.paymentId)), 'deliveries after the restore that are not repeats of a payment before the point').toEqual([]);

    console.log('restore drill', {
      recoveryMs: { total: readyAt - destroyedAt, destroyAndRestore: recoveredAt - destroyedAt, serviceStart: readyAt - recoveredAt },
      payments: { beforePoint: before.length, afterPoint: after.length },
      restorePointAt: restorePointAt.toISOString(),
      baseBackupBytes: backup.bytes,
      walArchived: { segments: archived.segments, bytes: archived.bytes, segmentMb: WAL_SEGMENT_MB, archiveTimeoutS: ARCHIVE_TIMEOUT_S, pointSegment, lastSegment },
      webhooks: { deliveredBeforeDestroy, repeatedAfterRestore: sentAfterRestore.length },
      reconciliation: runs,
      paidAgainAfterRestore: { status: again.status, message: again.body.message },
    });
  }, 120_000);
});
