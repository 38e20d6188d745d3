import { randomBytes } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse, InjectOptions } from 'fastify';
import pg from 'pg';
import type { Config } from '../../src/config/config.js';
import { testConfig } from './test-config.js';
import { pooledEmbeddedDatabase } from './embedded-database-pool.js';
import type { EmbeddedDatabase } from '../../src/db/database.js';
import { isInMemory } from '../../src/db/embedded-cluster.initializer.js';
import { createDeps, type Deps, type DepsOptions } from '../../src/composition/deps.factory.js';
import { buildServiceApps } from '../../src/composition/listeners.factory.js';
import { buildSimulator } from '../../simulator/simulator.app.js';
import type { FixtureFile } from '../../simulator/fixtures.schema.js';
import { SOURCES, type Source } from '../../src/domain/vocabulary.js';
import { testFixtures } from './fixtures.js';
import { attachContract } from './contract.js';
import { listenLocal } from './listen-local.js';
import { createSchemaCompilers } from '../../src/http/schema-compilers.js';

/**
 * The test context builds its apps with the function the API process uses (buildServiceApps), so
 * a test drives the very app a started service serves.
 *
 * Every context of a test worker compiles its routes' schemas with these compilers, which keep
 * each compiled schema: a context's own validators took a fifth of its start.
 */
const schemaCompilers = createSchemaCompilers();

export interface TestContext {
  config: Config;
  deps: Deps;
  app: FastifyInstance;
  admin: FastifyInstance;
  simulator: FastifyInstance;
  simulatorUrl: string;
  /** Moves the service's clock forward (the database's own now() is not affected). */
  advance(ms: number): void;
  /** The services' clock (real time plus every advance). */
  now(): Date;
  /** One pass of every background job, as the runner would do it. */
  runJobs(): Promise<void>;
  partner(opts?: { qrStandard?: 'qrpay' | 'govstd'; active?: boolean; environment?: 'sandbox' | 'production' }): Promise<{ id: string; apiKey: string }>;
  api(apiKey: string, opts: InjectOptions): Promise<LightMyRequestResponse>;
  sim(path: string, body: unknown): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export interface ContextOptions {
  /**
   * Reuse a database across contexts (a restart): on PostgreSQL this schema is used and kept on
   * close; on PGlite pass `config.dataDir` instead.
   */
  reuseSchema?: string;
  config?: Partial<Config>;
  fixtures?: FixtureFile;
  autoApproveMs?: number;
  /** Rate-limiter clock in epoch ms; by default it follows `now()` (real time plus advances). */
  rateLimitClock?: () => number;
  /** Rate-limit counts of the context's own in a shared Redis (see DepsOptions.rateLimitNamespace). */
  rateLimitNamespace?: string;
  /** Replaces the silent test logger, e.g. to capture log lines. */
  logger?: DepsOptions['logger'];
  /** Talk to this simulator (another context's) instead of the context's own: two instances, one ministry. */
  ministryUrl?: string;
}

export async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}

/** A test context's bound on a ministry call, unless its config says otherwise. */
export const MINISTRY_TIMEOUT_MS = 3000;

/** The worker's reused embedded database for a context in memory; none on PostgreSQL or on disk. */
async function embeddedDatabaseFor(config: Config): Promise<EmbeddedDatabase | undefined> {
  return config.databaseUrl || !isInMemory(config.dataDir) ? undefined : pooledEmbeddedDatabase();
}

/** A whole service on a fresh database (PGlite, or its own PostgreSQL schema) and a live simulator. */
export async function createTestContext(opts: ContextOptions = {}): Promise<TestContext> {
  const simulator = await buildSimulator({ fixtures: opts.fixtures ?? testFixtures(), autoApproveMs: opts.autoApproveMs ?? 0 });
  const simulatorUrl = await listenLocal(simulator);
  // The simulator answers in milliseconds; the timeout only bounds a hang. One second failed
  // lookups when the machine was busy (the simulator shares the test's event loop).
  const config = testConfig({ ministryTimeoutMs: MINISTRY_TIMEOUT_MS, ...opts.config });
  const schema = config.databaseUrl ? (opts.reuseSchema ?? `t_${randomBytes(6).toString('hex')}`) : undefined;
  const urls = Object.fromEntries(SOURCES.map((s) => [s, opts.ministryUrl ?? simulatorUrl])) as Record<Source, string>;
  let offsetMs = 0;
  const now = () => new Date(Date.now() + offsetMs);
  const deps = await createDeps(config, { ministryUrls: urls, dbSchema: schema, testClock: now, logger: opts.logger, rateLimitClock: opts.rateLimitClock, rateLimitNamespace: opts.rateLimitNamespace, embeddedDatabase: await embeddedDatabaseFor(config) });
  const { api: app, admin } = await buildServiceApps(config, deps, { logger: deps.logger, schemaCompilers });
  // Every answer of a documented operation is checked against the OpenAPI document (contract.ts).
  const contract = attachContract(app);

  return {
    config,
    deps,
    app,
    admin,
    simulator,
    simulatorUrl,
    now,
    advance(ms) {
      offsetMs += ms;
    },
    async runJobs() {
      for (const job of deps.jobs) {
        await job.run();
        await job.drain?.();
      }
    },
    async partner(p = {}) {
      const res = await admin.inject({
        method: 'POST',
        url: '/admin/partners',
        headers: { authorization: `Bearer ${config.adminToken}` },
        payload: { name: `Bank ${randomBytes(3).toString('hex')}`, ...p },
      });
      if (res.statusCode !== 201) throw new Error(`partner create failed: ${res.body}`);
      const body = res.json<{ id: string; apiKey: string }>();
      return { id: body.id, apiKey: body.apiKey };
    },
    async api(apiKey, injectOpts) {
      const res = await app.inject({ ...injectOpts, headers: { 'x-api-key': apiKey, ...injectOpts.headers } });
      const problems = contract.take(res.headers['x-request-id']);
      if (problems.length > 0) throw new Error(`The answer breaks the OpenAPI document:\n${problems.join('\n')}`);
      return res;
    },
    sim(path, body) {
      return simulator.inject({ method: 'POST', url: path, payload: body as object });
    },
    async close() {
      // Each step runs even if an earlier one fails (a test may have closed the database itself).
      const steps = [() => app.close(), () => admin.close(), () => deps.close(), () => simulator.close()];
      for (const step of steps) await step().catch(() => undefined);
      if (config.databaseUrl && schema && !opts.reuseSchema) await dropSchema(config.databaseUrl, schema);
      // Answers the test read through app.inject or over HTTP (the SDK) rather than api().
      const problems = contract.pending();
      if (problems.length > 0) throw new Error(`Answers broke the OpenAPI document:\n${problems.join('\n')}`);
    },
  };
}
