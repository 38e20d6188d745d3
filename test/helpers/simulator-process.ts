import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FixtureFile } from '../../simulator/fixtures.schema.js';
import { startEntryProcess, type ApiProcess } from './api-process.js';

/** The ministry simulator (`simulator/bin/simulator.ts`) as a process of its own, as it is deployed; its output in `artifacts/`. */
export interface SimulatorProcess extends ApiProcess {
  url: string;
}

/**
 * Starts the simulator on `port` with `fixtures` as its invoices and waits until its control API
 * answers. With `autoApproveMs` 0 nothing is approved but what the test approves.
 */
export async function startSimulatorProcess(name: string, opts: { port: number; fixtures: FixtureFile; autoApproveMs: number }): Promise<SimulatorProcess> {
  const fixturesDir = mkdtempSync(join(tmpdir(), 'gpc-sim-'));
  const fixturesPath = join(fixturesDir, 'fixtures.json');
  writeFileSync(fixturesPath, JSON.stringify(opts.fixtures));
  const env = { SIMULATOR_PORT: String(opts.port), SIMULATOR_FIXTURES: fixturesPath, SIMULATOR_AUTO_APPROVE_MS: String(opts.autoApproveMs), HOST: '127.0.0.1', LOG_LEVEL: 'warn' };
  const url = `http://127.0.0.1:${opts.port}`;
  const removeFixtures = () => rmSync(fixturesDir, { recursive: true, force: true });
  let started: ApiProcess;
  try {
    started = await startEntryProcess(name, 'simulator/bin/simulator.ts', env, `${url}/__control/payments`);
  } catch (err) {
    removeFixtures();
    throw err;
  }
  return {
    ...started,
    url,
    async stop() {
      await started.stop();
      removeFixtures();
    },
  };
}
