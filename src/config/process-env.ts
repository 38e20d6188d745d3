import { ConfigError } from './start-failure.js';

/**
 * The one module that reads process.env, and the settings that need nothing more than it: the
 * operator CLI's. The service's settings (src/config.ts) are checked against a TypeBox schema,
 * whose 709 modules cost about a second to load through tsx; the CLI, which only needs where the
 * admin API is and its token, starts without them.
 */

export type Env = Record<string, string | undefined>;

/** The process's environment; every reader takes it from here. */
export function processEnv(): Env {
  return process.env;
}

/** A variable's value; unset and empty are the same. */
export function str(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw === '' ? undefined : raw;
}

/** Whether the process writes to a terminal: a local start's logs are then made for reading. */
export function stdoutIsTerminal(): boolean {
  return process.stdout.isTTY === true;
}

/** A whole number; anything else set is refused. */
export function int(env: Env, name: string): number | undefined {
  const raw = str(env, name);
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n)) throw new Error(`${name} must be an integer, got "${raw}"`);
  return n;
}

export const DEFAULT_ADMIN_PORT = 3001;
/** A worker's admin listener (health and metrics): beside an `api` or `all` process on one host, the ports differ by default. */
export const WORKER_ADMIN_PORT = 3002;
/** The admin token of a local start; any other APP_ENV must set its own (src/config.ts). */
export const LOCAL_ADMIN_TOKEN = 'local-admin-token';

export interface CliConfig {
  adminUrl: string;
  adminToken: string;
}

/** The operator CLI's settings: the admin API it calls (ADMIN_URL, else this host's ADMIN_PORT) and ADMIN_TOKEN. */
export function loadCliConfig(env: Env = processEnv()): CliConfig {
  let port: number;
  try {
    port = int(env, 'ADMIN_PORT') ?? DEFAULT_ADMIN_PORT;
  } catch (err) {
    throw new ConfigError([(err as Error).message]);
  }
  return {
    adminUrl: (str(env, 'ADMIN_URL') ?? `http://127.0.0.1:${port}`).replace(/\/$/, ''),
    adminToken: str(env, 'ADMIN_TOKEN') ?? LOCAL_ADMIN_TOKEN,
  };
}
