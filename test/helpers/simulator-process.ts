import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { vi } from 'vitest';
import type { FixtureFile } from '../../simulator/fixtures.schema.js';

/** The ministry simulator (`simulator/bin/simulator.ts`) as a process of its own, as it is deployed; its output in `artifacts/`. */
export interface SimulatorProcess {
  proc: ChildProcess;
  url: string;
  logFile: string;
  /** SIGTERM, and resolves once it has exited. */
  stop(): Promise<void>;
}

/**
 * Starts the simulator on `port` with `fixtures` as its invoices and waits until its control API
 * answers. With `autoApproveMs` 0 nothing is approved but what the test approves.
 */
export async function startSimulatorProcess(name: string, opts: { port: number; fixtures: FixtureFile; autoApproveMs: number }): Promise<SimulatorProcess> {
  const fixturesDir = mkdtempSync(join(tmpdir(), 'gpc-sim-'));
  const fixturesPath = join(fixturesDir, 'fixtures.json');
  writeFileSync(fixturesPath, JSON.stringify(opts.fixtures));
  mkdirSync('artifacts', { recursive: true });
  const logFile = `artifacts/${name}.log`;
  const log = createWriteStream(logFile);
  const env = { SIMULATOR_PORT: String(opts.port), SIMULATOR_FIXTURES: fixturesPath, SIMULATOR_AUTO_APPROVE_MS: String(opts.autoApproveMs), HOST: '127.0.0.1', LOG_LEVEL: 'warn' };
  const proc = spawn(process.execPath, ['--import', 'tsx', 'simulator/bin/simulator.ts'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout?.pipe(log);
  proc.stderr?.pipe(log);
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${opts.port}`;
  const stop = async () => {
    if (proc.exitCode === null) proc.kill('SIGTERM');
    await exited;
    rmSync(fixturesDir, { recursive: true, force: true });
  };
  try {
    await vi.waitFor(
      async () => {
        if (proc.exitCode !== null) throw new Error(`${name} exited with ${proc.exitCode}; see ${logFile}`);
        const res = await fetch(`${url}/__control/payments`);
        if (!res.ok) throw new Error(`${name} not ready: HTTP ${res.status}`);
      },
      { timeout: 30_000, interval: 100 },
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { proc, url, logFile, stop };
}
