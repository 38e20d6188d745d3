import { fileURLToPath } from 'node:url';

export interface SimulatorConfig {
  host: string;
  port: number;
  fixturesPath: string;
  autoApproveMs: number;
  /** pino level of the request log; the same variable as the service's. */
  logLevel: string;
}

export const DEMO_FIXTURES_PATH = fileURLToPath(new URL('./fixtures/demo.json', import.meta.url));

function nonNegativeInt(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  }
  return value;
}

/** The only reader of process.env for the standalone simulator. */
export function loadSimulatorConfig(env: NodeJS.ProcessEnv = process.env): SimulatorConfig {
  const port = nonNegativeInt(env, 'SIMULATOR_PORT', 3100);
  if (port > 65_535) throw new Error(`SIMULATOR_PORT must be at most 65535, got ${port}`);
  return {
    host: env.HOST || '127.0.0.1',
    port,
    fixturesPath: env.SIMULATOR_FIXTURES || DEMO_FIXTURES_PATH,
    autoApproveMs: nonNegativeInt(env, 'SIMULATOR_AUTO_APPROVE_MS', 5000),
    logLevel: env.LOG_LEVEL || 'info',
  };
}
