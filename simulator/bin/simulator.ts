import { loadFixtures } from '../fixtures.schema.js';
import { buildSimulator } from '../simulator.app.js';
import { loadSimulatorConfig } from '../simulator.config.js';

async function main(): Promise<void> {
  const config = loadSimulatorConfig();
  const fixtures = await loadFixtures(config.fixturesPath);
  const app = await buildSimulator({ fixtures, autoApproveMs: config.autoApproveMs, logLevel: config.logLevel });
  await app.listen({ host: config.host, port: config.port });
  app.log.info(`simulated ministries (mof, etax, police) with ${fixtures.invoices.length} invoices from ${config.fixturesPath}`);

  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    app.log.info(`${signal} received, shutting down`);
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        app.log.error(error);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
