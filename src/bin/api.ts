import { loadConfig } from '../config/config.js';
import { startTracing } from '../adapters/tracing/tracing.loader.js';
import { initializeEmbeddedClusterOnDisk, isInMemory } from '../db/embedded-cluster.initializer.js';

/*
 * The API's entry. Tracing starts before the rest of the service is imported: with an exporter,
 * the OpenTelemetry loader hook must be in place before pg and ioredis are first imported, or the
 * instrumentations never see them. Without one nothing of OpenTelemetry is loaded.
 */
async function start(): Promise<void> {
  const config = loadConfig();
  const tracing = await startTracing(config.otel);
  // A first start on disk (a fresh clone's) makes the embedded cluster: initdb, seconds of CPU in a
  // child process. It runs while the service's modules load rather than after them.
  const cluster = config.databaseUrl || isInMemory(config.dataDir) ? null : initializeEmbeddedClusterOnDisk(config.dataDir);
  const [{ main }] = await Promise.all([import('./api-main.js'), cluster]);
  await main(config, tracing);
}

start().catch((err: unknown) => {
  console.error('failed to start:', err);
  process.exit(1);
});
