import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSimulator } from '../../simulator/simulator.app.js';
import { createPartnerKey, serviceEnv, startApiProcess, type ApiProcess } from '../helpers/api-process.js';
import { seededDataDir } from '../helpers/database-image.js';
import { REG, testFixtures } from '../helpers/fixtures.js';
import { listenLocal } from '../helpers/listen-local.js';
import { createDatabase, queryOnce } from '../helpers/pg-query.js';
import { testConfig } from '../helpers/test-config.js';
import { freePorts } from '../walkthrough/walkthrough.js';

/*
 * Issue 60, against the production heap cap (`npm run start:prod`: --max-old-space-size=192): a
 * real service process whose mof answers its lookups with each shape the red team sent, from the
 * simulator over real HTTP. Before the bound, the 25 MB of members and the 180 MB string each
 * ran the process out of heap and the endless body took it past 1.8 GB resident in one call. Here
 * it lives, its memory comes back to its level (and its peak barely moves), and the other systems
 * keep answering. Memory, not time, is what is asserted.
 */

const { databaseUrl } = testConfig();
const ADMIN_TOKEN = 'oversize-admin-token';
const HEAP_CAP = ['--max-old-space-size=192', '--v8-pool-size=1', '--no-allocation-site-pretenuring'];
/** Far above what a bounded read costs (a few MiB), far below one unbounded answer. */
const MARGIN_KB = 150 * 1024;
const LOOKUPS_PER_SHAPE = 4;
const SHAPES = ['huge-members', 'huge-string', 'endless'] as const;

/** Resident set now, and its high-water mark, of a process (Linux /proc), in kB. */
async function memoryOf(pid: number): Promise<{ rssKb: number; peakKb: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rssKb: kb('VmRSS'), peakKb: kb('VmHWM') };
}

describe.skipIf(!existsSync('/proc/self/status'))('oversized ministry answers under the production heap cap', () => {
  const dbName = `oversize_${Date.now()}_${process.pid}`;
  let simulator: FastifyInstance;
  let service: ApiProcess | undefined;
  let port = 0;
  let adminPort = 0;
  let dataDir = '';
  let apiKey = '';

  const api = (path: string) => fetch(`http://127.0.0.1:${port}/api/v1${path}`, { headers: { 'x-api-key': apiKey } });
  const fault = async (body: Record<string, unknown>) => {
    expect((await simulator.inject({ method: 'POST', url: '/__control/faults', payload: body })).statusCode).toBe(200);
  };

  beforeAll(async () => {
    simulator = await buildSimulator({ fixtures: testFixtures(), autoApproveMs: 0 });
    const simulatorUrl = await listenLocal(simulator);
    const dbUrl = databaseUrl ? await createDatabase(databaseUrl, dbName) : '';
    [port = 0, adminPort = 0] = await freePorts(2);
    // On PGlite, a data directory that already holds a migrated cluster: the service skips initdb.
    dataDir = databaseUrl ? 'memory://' : await seededDataDir('gpc-oversize-');
    const env = serviceEnv({ databaseUrl: dbUrl, port, adminPort, adminToken: ADMIN_TOKEN, ministryUrl: simulatorUrl }, {
      DATA_DIR: dataDir,
      LOG_LEVEL: 'error',
      // Every lookup reaches mof: an open circuit would spare the process the later shapes.
      CIRCUIT_BREAKER_FAILURES: '1000',
    });
    service = await startApiProcess('oversized-answers', env, `http://127.0.0.1:${port}/api/v1/health/ready`, HEAP_CAP);
    apiKey = await createPartnerKey(adminPort, ADMIN_TOKEN, 'Oversize Bank');
  }, 120_000);

  afterAll(async () => {
    await service?.stop();
    await simulator?.close();
    if (databaseUrl) await queryOnce(databaseUrl, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    else if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('lives through each shape, its memory back at its level, the other systems still served', async () => {
    const proc = (service as ApiProcess).proc;
    const pid = proc.pid as number;
    // Warm: every route and adapter has run once, so what follows measures the answers, not the first calls.
    for (let i = 0; i < 3; i += 1) {
      expect((await api(`/invoices?ttd=${REG}`)).status).toBe(200);
      expect((await api('/invoices/ref/MOF-T-1')).status).toBe(200);
    }
    const before = await memoryOf(pid);

    for (const mode of SHAPES) {
      await fault({ source: 'mof', mode, operation: 'invoice' });
      await fault({ source: 'mof', mode, operation: 'search' });
      const lookups = await Promise.all(Array.from({ length: LOOKUPS_PER_SHAPE }, () => api('/invoices/ref/MOF-T-1')));
      expect(lookups.map((r) => r.status), mode).toEqual(Array(LOOKUPS_PER_SHAPE).fill(503));
      // mof's part of a search fails alone: etax's and police's invoices are still there.
      const found = await api(`/invoices?ttd=${REG}`);
      expect(found.status, mode).toBe(200);
      const payees = new Set(((await found.json()) as { invoices: { payee: { id: string } }[] }).invoices.map((i) => i.payee.id));
      expect([...payees].filter((id) => id !== 'ORG-100').sort(), mode).toEqual(['ORG-200', 'ORG-300']);
      await fault({ source: 'mof', mode: 'none' });
      expect(proc.exitCode, `${mode}: the process exited; see ${service?.logFile}`).toBeNull();
    }

    expect((await fetch(`http://127.0.0.1:${port}/api/v1/health/ready`)).status).toBe(200);
    expect((await api('/invoices/ref/ET-T-1')).status).toBe(200);
    const after = await memoryOf(pid);
    expect(after.rssKb - before.rssKb, `resident ${before.rssKb} kB before, ${after.rssKb} kB after`).toBeLessThan(MARGIN_KB);
    expect(after.peakKb - before.peakKb, `peak ${before.peakKb} kB before, ${after.peakKb} kB after`).toBeLessThan(MARGIN_KB);
  });
});
