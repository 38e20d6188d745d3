import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { vi } from 'vitest';

/** A process of the project (the service's `src/bin/api.ts`, the simulator's) started as an operator would, with its output in `artifacts/`. */
export interface ApiProcess {
  proc: ChildProcess;
  logFile: string;
  /** SIGTERM, and resolves once it has exited. */
  stop(): Promise<void>;
}

/** A local service on `databaseUrl` whose three ministry systems are one simulator, with fast jobs and no practical rate or address limit. */
export function serviceEnv(opts: { databaseUrl: string; port: number; adminPort: number; adminToken: string; ministryUrl: string }, extra: Record<string, string> = {}): Record<string, string> {
  return {
    APP_ENV: 'local',
    DATABASE_URL: opts.databaseUrl,
    PORT: String(opts.port),
    ADMIN_PORT: String(opts.adminPort),
    ADMIN_TOKEN: opts.adminToken,
    MINISTRY_MOF_URL: opts.ministryUrl,
    MINISTRY_ETAX_URL: opts.ministryUrl,
    MINISTRY_POLICE_URL: opts.ministryUrl,
    CONFIRM_POLL_MS: '100',
    WEBHOOK_POLL_MS: '100',
    RATE_LIMIT_PER_SECOND: '100000',
    RATE_LIMIT_PER_MINUTE: '1000000',
    RATE_LIMIT_PER_HOUR: '10000000',
    // The per-address limits count every process and suite that shares a Redis (CI's does): a
    // suite's deliberate 401s from 127.0.0.1 must not refuse this process's requests.
    AUTH_FAILURES_PER_MINUTE: '1000000',
    SHORT_LINK_RATE_LIMIT_PER_MINUTE: '1000000',
    LOG_LEVEL: 'warn',
    ...extra,
  };
}

/** The processes keep their rate limits in memory unless the test names a Redis. */
function withoutRedis(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { REDIS_URL: _redis, ...rest } = env;
  return rest;
}

/**
 * Starts the service with `env` on top of this process's environment (less REDIS_URL) and waits
 * until `readyUrl` answers 200: it listens and reaches its database. `nodeArgs` go to node before
 * the script, e.g. the production heap cap of `npm run start:prod`. A process not ready within
 * `readyTimeoutMs` is killed.
 */
export function startApiProcess(name: string, env: Record<string, string>, readyUrl: string, nodeArgs: readonly string[] = [], readyTimeoutMs = 30_000): Promise<ApiProcess> {
  return startEntryProcess(name, 'src/bin/api.ts', env, readyUrl, { nodeArgs, readyTimeoutMs });
}

/**
 * Starts a long-running entry point (`script`, through tsx) as startApiProcess does the service's:
 * its output in `artifacts/<name>.log`, ready once `readyUrl` answers 200, killed if it never is.
 */
export async function startEntryProcess(
  name: string,
  script: string,
  env: Record<string, string>,
  readyUrl: string,
  opts: { nodeArgs?: readonly string[]; readyTimeoutMs?: number } = {},
): Promise<ApiProcess> {
  mkdirSync('artifacts', { recursive: true });
  const logFile = `artifacts/${name}.log`;
  const log = createWriteStream(logFile);
  const proc = spawn(process.execPath, [...(opts.nodeArgs ?? []), '--import', 'tsx', script], { env: { ...withoutRedis(process.env), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout?.pipe(log);
  proc.stderr?.pipe(log);
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  try {
    await vi.waitFor(
      async () => {
        if (proc.exitCode !== null) throw new Error(`${name} exited with ${proc.exitCode}; see ${logFile}`);
        const res = await fetch(readyUrl);
        if (!res.ok) throw new Error(`${name} not ready: HTTP ${res.status}`);
      },
      { timeout: opts.readyTimeoutMs ?? 30_000, interval: 100 },
    );
  } catch (err) {
    // Nobody else holds the process to stop it.
    if (proc.exitCode === null) proc.kill('SIGKILL');
    throw err;
  }
  return {
    proc,
    logFile,
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}

/** A partner made through the operator API of a service process; its API key. */
export async function createPartnerKey(adminPort: number, adminToken: string, name: string): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${adminPort}/admin/partners`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name }),
  });
  if (res.status !== 201) throw new Error(`creating partner ${name}: HTTP ${res.status} ${await res.text()}`);
  return ((await res.json()) as { apiKey: string }).apiKey;
}
