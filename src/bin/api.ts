import { loadConfig } from '../config.js';
import { startTracing } from '../adapters/tracing/tracing.loader.js';

/*
 * The API's entry. Tracing starts before the rest of the service is imported: with an exporter,
 * the OpenTelemetry loader hook must be in place before pg and ioredis are first imported, or the
 * instrumentations never see them. Without one nothing of OpenTelemetry is loaded.
 */
async function start(): Promise<void> {
  const config = loadConfig();
  const tracing = await startTracing(config.otel);
  const { main } = await import('./api-main.js');
  await main(config, tracing);
}

start().catch((err: unknown) => {
  console.error('failed to start:', err);
  process.exit(1);
});
