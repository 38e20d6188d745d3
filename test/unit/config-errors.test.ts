import { describe, expect, it } from 'vitest';
import { EX_CONFIG } from '../../src/config/start-failure.js';
import { runEntry, STACK_LINE } from '../helpers/entry-process.js';

/*
 * A start with wrong settings, as an operator meets it: every problem on a line of its own,
 * named by its variable, no stack, and exit code 78 (EX_CONFIG), from each entry point.
 */

const WEBHOOK_KEY_TOO_SHORT = 'short-webhook-key';

/** Production with two secrets wrong, numbers, a flag and a list that do not parse, a bad word and a bad time. */
const WRONG = {
  APP_ENV: 'production',
  ADMIN_TOKEN: '',
  WEBHOOK_SECRET_KEY: WEBHOOK_KEY_TOO_SHORT,
  PORT: 'http',
  DB_CONNECT_TIMEOUT_MS: 'soon',
  RATE_LIMIT_FAIL_OPEN: 'maybe',
  WEBHOOK_RETRY_SCHEDULE_MS: '0,5000,later',
  PROCESS_ROLE: 'boss',
  RECONCILE_AT: '25:00',
  MINISTRY_MOF_URL: '',
  MINISTRY_ETAX_URL: 'http://etax.internal',
  MINISTRY_POLICE_URL: '',
};

/** The variable each `configuration:` line names, in order; fails on any other line. */
function namedVariables(stderr: string): string[] {
  const lines = stderr.trim().split('\n');
  for (const line of lines) expect(line).toMatch(/^configuration: [A-Z][A-Z0-9_]* /);
  return lines.map((line) => /^configuration: ([A-Z][A-Z0-9_]*) /.exec(line)?.[1] ?? '');
}

describe('a start with wrong settings', () => {
  it('the service names every problem on a line of its own and exits 78, without a stack', async () => {
    const run = await runEntry('src/bin/api.ts', WRONG);
    expect(run.code).toBe(EX_CONFIG);
    expect(run.stderr).not.toMatch(STACK_LINE);
    expect(run.stderr).not.toContain(WEBHOOK_KEY_TOO_SHORT);
    expect(run.stdout).toBe('');
    expect(namedVariables(run.stderr).sort()).toEqual(
      [
        'ADMIN_TOKEN',
        'WEBHOOK_SECRET_KEY',
        'PORT',
        'DB_CONNECT_TIMEOUT_MS',
        'RATE_LIMIT_FAIL_OPEN',
        'WEBHOOK_RETRY_SCHEDULE_MS',
        'PROCESS_ROLE',
        'RECONCILE_AT',
        'MINISTRY_MOF_URL',
        'MINISTRY_POLICE_URL',
      ].sort(),
    );
    expect(run.stderr).toContain('configuration: ADMIN_TOKEN is required when APP_ENV=production\n');
    expect(run.stderr).toContain('configuration: PORT must be an integer, got "http"\n');
    expect(run.stderr).toContain('configuration: PROCESS_ROLE must be one of all, api, worker\n');
    expect(run.stderr).toContain('configuration: MINISTRY_POLICE_URL is required when APP_ENV=production\n');
  }, 60_000);

  it('the migration step names the database settings it reads, and needs no secret', async () => {
    const run = await runEntry('src/bin/migrate.ts', { ...WRONG, DATA_DIR: 'memory://', DB_KEEPALIVE_MS: '10s' });
    expect(run.code).toBe(EX_CONFIG);
    expect(run.stderr).not.toMatch(STACK_LINE);
    expect(namedVariables(run.stderr)).toEqual(['DB_CONNECT_TIMEOUT_MS', 'DB_KEEPALIVE_MS']);
  }, 60_000);

  it('the operator CLI names an ADMIN_PORT that is not a number', async () => {
    const run = await runEntry('src/bin/cli.ts', { ADMIN_PORT: 'admin', ADMIN_URL: '' }, ['partner', 'list']);
    expect(run.code).toBe(EX_CONFIG);
    expect(run.stderr).toBe('configuration: ADMIN_PORT must be an integer, got "admin"\n');
  }, 60_000);
});
