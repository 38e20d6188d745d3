import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../config/config.js';
import { startFailure } from '../config/start-failure.js';
import { startTracing } from '../adapters/tracing/tracing.loader.js';
import { initializeEmbeddedClusterOnDisk, isInMemory } from '../db/embedded-cluster.initializer.js';

/*
 * The API's entry. Tracing starts before the rest of the service is imported: with an exporter,
 * the OpenTelemetry loader hook must be in place before pg and ioredis are first imported, or the
 * instrumentations never see them. Without one nothing of OpenTelemetry is loaded.
 */
async function start(): Promise<void> {
  const config = loadConfig(undefined, { upstreams: true });
  const tracing = await startTracing(config.otel);
  // A first start on disk (a fresh clone's) makes the embedded cluster: initdb, seconds of CPU in a
  // child process. It runs while the service's modules load rather than after them.
  const onDisk = !config.databaseUrl && !isInMemory(config.dataDir);
  // The logger is not made yet (it comes with the service's modules): the first start says why it waits.
  if (onDisk && !existsSync(join(config.dataDir, 'PG_VERSION'))) console.error(`making the embedded database in ${config.dataDir} (first start only, about 10 s)`);
  const cluster = onDisk ? initializeEmbeddedClusterOnDisk(config.dataDir) : null;
  const [{ main }] = await Promise.all([import('./api-main.js'), cluster]);
  await main(config, tracing);
}

start().catch((err: unknown) => {
  const failure = startFailure(err, 'failed to start');
  if (!failure) console.error('failed to start:', err);
  for (const line of failure?.lines ?? []) console.error(line);
  process.exit(failure?.exitCode ?? 1);
});
