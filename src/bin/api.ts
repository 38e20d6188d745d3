import { fileURLToPath } from 'node:url';
import { loadConfig, type Config } from '../config.js';
import { createDeps, createLogger } from '../deps.js';
import { buildApp, API_PREFIX } from '../app.js';
import { buildAdminApp } from '../admin-app.js';
import { buildSimulator } from '../../simulator/simulator.app.js';
import { loadFixtures } from '../../simulator/fixtures.schema.js';
import { SOURCES, type Source } from '../domain/vocabulary.js';
import { printDemoBanner } from './demo-banner.js';
import { operatorsOf } from '../http/plugins/admin-auth.plugin.js';
import { openApiServers } from '../http/plugins/openapi.plugin.js';
import type { FastifyInstance } from 'fastify';

const DEMO_FIXTURES = fileURLToPath(new URL('../../simulator/fixtures/demo.json', import.meta.url));

/** In `local`, unset upstream URLs mean "use the built-in simulator", started here. */
async function resolveMinistries(config: Config): Promise<{ urls: Record<Source, string>; simulator: FastifyInstance | null }> {
  const missing = SOURCES.filter((s) => config.ministryUrls[s] === null);
  if (missing.length > 0 && config.appEnv !== 'local') {
    throw new Error(`MINISTRY_${missing[0]?.toUpperCase()}_URL is required when APP_ENV=${config.appEnv}`);
  }
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

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config);
  const { urls, simulator } = await resolveMinistries(config);
  const deps = await createDeps(config, { ministryUrls: urls, logger });
  const app = await buildApp({
    logger,
    bodyLimitBytes: config.bodyLimitBytes,
    services: deps.services,
    isDbReady: deps.isDbReady,
    metrics: deps.metrics,
    openApiServers: openApiServers(config, API_PREFIX),
  });
  const admin = await buildAdminApp({ logger, operators: operatorsOf(config), allowedHosts: config.adminAllowedHosts, services: deps.admin, metrics: deps.metrics });
  const jobs = deps.startJobs();

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 10_000).unref();
    await jobs.stop();
    await Promise.allSettled([app.close(), admin.close()]);
    await deps.close();
    if (simulator) await simulator.close();
    clearTimeout(force);
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));

  await app.listen({ port: config.port, host: config.host });
  await admin.listen({ port: config.adminPort, host: config.adminHost });
  logger.info({ api: `http://${config.host}:${config.port}${API_PREFIX}`, admin: `http://${config.adminHost}:${config.adminPort}` }, 'listening');
  if (config.appEnv === 'local') await printDemoBanner(config, deps.services.partners, simulator !== null);
}

main().catch((err: unknown) => {
  console.error('failed to start:', err);
  process.exit(1);
});
