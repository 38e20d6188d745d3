import { spawn } from 'node:child_process';

/** How an entry point ended: its exit code and what it wrote. */
export interface EntryRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `script` (src/bin/...) as an operator would, through tsx, with `env` on top of this
 * process's environment less DATABASE_URL and REDIS_URL (the test names its own), until it exits.
 */
export function runEntry(script: string, env: Record<string, string>, args: readonly string[] = []): Promise<EntryRun> {
  const { DATABASE_URL: _db, REDIS_URL: _redis, ...inherited } = process.env;
  const proc = spawn(process.execPath, ['--import', 'tsx', script, ...args], { env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  proc.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    proc.once('error', reject);
    proc.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A stack trace's frame lines (`    at f (file:1:2)`): an operator-facing failure has none. */
export const STACK_LINE = /^\s+at /m;
