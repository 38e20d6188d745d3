import { fileURLToPath } from 'node:url';
import type { Config } from '../config/config.js';
import type { Tracing } from '../adapters/tracing/tracing.loader.js';
import { createDeps, createLogger } from '../composition/deps.factory.js';
import { buildListeners } from '../composition/listeners.factory.js';
import { createDrainState, createProcessShutdown } from '../composition/shutdown.factory.js';
import { API_PREFIX } from '../app.js';
import { buildSimulator } from '../../simulator/simulator.app.js';
import { loadFixtures } from '../../simulator/fixtures.schema.js';
import { SOURCES, type Source } from '../domain/vocabulary.js';
import { printDemoBanner } from './demo-banner.js';
import type { FastifyInstance } from 'fastify';

const DEMO_FIXTURES = fileURLToPath(new URL('../../simulator/fixtures/demo.json', import.meta.url));

/**
 * In `local`, unset upstream URLs mean "use the built-in simulator", started here. Outside it the
 * configuration (loadConfig's `upstreams`, src/bin/api.ts) has refused a start without them.
 */
async function resolveMinistries(config: Config): Promise<{ urls: Record<Source, string>; simulator: FastifyInstance | null }> {
  const missing = SOURCES.filter((s) => config.ministryUrls[s] === null);
  let simulator: FastifyInstance | null = null;
  let simUrl = '';
  if (missing.length > 0) {
    const fixturesPath = config.simulator.fixtures ?? DEMO_FIXTURES;
    simulator = await buildSimulator({ fixtures: await loadFixtures(fixturesPath), autoApproveMs: config.simulator.autoApproveMs });
    await simulator.listen({ port: config.simulator.port, host: '127.0.0.1' });
    simUrl = `http://127.0.0.1:${config.simulator.port}`;
  }
  const urls = Object.fromEntries(SOURCES.map((s) => [s, config.ministryUrls[s] ?? simUrl])) as Record<Source, string>;
  return { urls, simulator };
}

/** The API process, once src/bin/api.ts has started tracing (before pg and ioredis are imported). */
export async function main(config: Config, tracing: Tracing): Promise<void> {
  const logger = createLogger(config);
  const { urls, simulator } = await resolveMinistries(config);
  const deps = await createDeps(config, { ministryUrls: urls, logger, tracer: tracing.tracer, asyncContext: tracing.asyncContext });
  const drain = createDrainState();
  const listeners = await buildListeners(config, deps, logger, { drain });
  const jobs = config.processRole === 'api' ? null : deps.startJobs();

  const shutdown = createProcessShutdown({
    drain,
    drainMs: config.processRole === 'worker' ? 0 : config.shutdownDrainMs,
    closeDeadlineMs: 10_000,
    stopJobs: async () => jobs?.stop(),
    closeListeners: async () => {
      await Promise.allSettled(listeners.map((l) => l.app.close()));
    },
    closeRest: async () => {
      await deps.close();
      if (simulator) await simulator.close();
      await tracing.shutdown().catch(() => undefined);
    },
    logger,
    exit: (code) => process.exit(code),
  });
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));

  for (const l of listeners) await l.app.listen({ port: l.port, host: l.host });
  logger.info({ role: config.processRole, listeners: listeners.map((l) => `http://${l.host}:${l.port}`), apiPrefix: API_PREFIX }, 'listening');
  if (config.appEnv === 'local' && config.processRole !== 'worker') await printDemoBanner(config, deps.services.partners, simulator !== null, console.log, (line) => logger.info(line));
}
