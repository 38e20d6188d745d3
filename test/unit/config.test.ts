import { describe, expect, it } from 'vitest';
import { loadConfig, SECRET_MIN_LENGTH } from '../../src/config/config.js';
import { operatorsOf } from '../../src/http/plugins/admin-auth.plugin.js';
import { openApiServers } from '../../src/http/plugins/openapi.plugin.js';
import { LOCAL_ADMIN_TOKEN, loadCliConfig } from '../../src/config/process-env.js';

describe('operator and reconciliation settings', () => {
  it('names operators from ADMIN_TOKENS beside ADMIN_TOKEN, which stays operator admin', () => {
    const config = loadConfig({ ADMIN_TOKEN: 'single-admin-token', ADMIN_TOKENS: 'dorj:dorj-token-1234, saraa:saraa-token-5678' });
    expect(operatorsOf(config)).toEqual([
      { name: 'admin', token: 'single-admin-token' },
      { name: 'dorj', token: 'dorj-token-1234' },
      { name: 'saraa', token: 'saraa-token-5678' },
    ]);
  });

  it('refuses a pair without a name, a short token or a bad operator name', () => {
    expect(() => loadConfig({ ADMIN_TOKENS: 'no-colon-here' })).toThrow(/ADMIN_TOKENS/);
    expect(() => loadConfig({ ADMIN_TOKENS: 'dorj:short' })).toThrow(/Invalid configuration/);
    expect(() => loadConfig({ ADMIN_TOKENS: 'dorj smith:long-enough-token' })).toThrow(/Invalid configuration/);
  });

  it('schedules the reconciliation at RECONCILE_AT, 02:00 by default', () => {
    expect(loadConfig({}).reconciliation).toMatchObject({ at: '02:00', retryMs: 15 * 60_000 });
    expect(loadConfig({ RECONCILE_AT: '06:30', RECONCILE_RETRY_MS: '60000' }).reconciliation).toMatchObject({ at: '06:30', retryMs: 60_000 });
    expect(() => loadConfig({ RECONCILE_AT: '25:00' })).toThrow(/Invalid configuration/);
  });
});

describe('secrets outside local', () => {
  /** Long, random-looking and nobody's default: what an operator generates (`openssl rand -hex 24`). */
  const ADMIN = 'a3f1c9e07b5d42e8916f0c7a2b4d8e6f13579bdf02468ace';
  const WEBHOOK_KEY = '5e0b7c1d9a2f4863b7e1c0d5a9f3e2b16c8d4f0a7e3b9c15d2f6a0e4b8c7d3f1';
  const SHORT = 'short-but-over-eight';
  const LOCAL_WEBHOOK_KEY = loadConfig({}).webhookSecretKey;

  /** The message loadConfig refuses `env` with. */
  function refusal(env: Record<string, string>): string {
    try {
      loadConfig(env);
    } catch (err) {
      return (err as Error).message;
    }
    throw new Error('the configuration was accepted');
  }

  it.each(['production', 'sandbox'])('%s starts with generated secrets of at least the minimum length', (appEnv) => {
    const config = loadConfig({ APP_ENV: appEnv, ADMIN_TOKEN: ADMIN, WEBHOOK_SECRET_KEY: WEBHOOK_KEY, ADMIN_TOKENS: `dorj:${ADMIN.slice(0, SECRET_MIN_LENGTH)}` });
    expect(config).toMatchObject({ adminToken: ADMIN, webhookSecretKey: WEBHOOK_KEY, adminTokens: [{ name: 'dorj', token: ADMIN.slice(0, SECRET_MIN_LENGTH) }] });
  });

  it('refuses the documented local admin token in production, naming ADMIN_TOKEN', () => {
    const message = refusal({ APP_ENV: 'production', ADMIN_TOKEN: 'local-admin-token', WEBHOOK_SECRET_KEY: WEBHOOK_KEY });
    expect(message).toMatch(/^Invalid configuration: ADMIN_TOKEN is a publicly documented local default/);
    expect(message).not.toContain('local-admin-token');
  });

  it('refuses the local webhook key, though it is long enough', () => {
    expect(LOCAL_WEBHOOK_KEY.length).toBeGreaterThanOrEqual(SECRET_MIN_LENGTH);
    const message = refusal({ APP_ENV: 'production', ADMIN_TOKEN: ADMIN, WEBHOOK_SECRET_KEY: LOCAL_WEBHOOK_KEY });
    expect(message).toMatch(/WEBHOOK_SECRET_KEY is a publicly documented local default/);
    expect(message).not.toContain(LOCAL_WEBHOOK_KEY);
  });

  it('refuses a token shorter than the minimum that local accepts', () => {
    expect(loadConfig({ ADMIN_TOKEN: SHORT }).adminToken).toBe(SHORT);
    const message = refusal({ APP_ENV: 'sandbox', ADMIN_TOKEN: SHORT, WEBHOOK_SECRET_KEY: WEBHOOK_KEY });
    expect(message).toBe(`Invalid configuration: ADMIN_TOKEN must have at least ${SECRET_MIN_LENGTH} characters when APP_ENV=sandbox`);
  });

  it('refuses a local default or a short token among the named operators, by position', () => {
    const message = refusal({ APP_ENV: 'production', ADMIN_TOKEN: ADMIN, WEBHOOK_SECRET_KEY: WEBHOOK_KEY, ADMIN_TOKENS: `dorj:${ADMIN}, saraa:${LOCAL_ADMIN_TOKEN}, bat:12345678` });
    expect(message).toContain('ADMIN_TOKENS (pair 2) is a publicly documented local default');
    expect(message).toContain(`ADMIN_TOKENS (pair 3) must have at least ${SECRET_MIN_LENGTH} characters`);
    expect(message).not.toContain('pair 1');
    expect(message).not.toContain('12345678');
  });

  it('names every offender at once, beside every other invalid setting, and no secret', () => {
    const env = {
      APP_ENV: 'production',
      ADMIN_TOKEN: LOCAL_ADMIN_TOKEN,
      WEBHOOK_SECRET_KEY: 'sixteen-chars-ok',
      ADMIN_TOKENS: 'dorj:eight-ch, saraa:x',
      RECONCILE_AT: '25:00',
      AUTH_FAILURES_PER_MINUTE: '0',
    };
    const message = refusal(env);
    for (const offender of ['ADMIN_TOKEN is', 'WEBHOOK_SECRET_KEY must', 'ADMIN_TOKENS (pair 1)', 'ADMIN_TOKENS (pair 2)', 'RECONCILE_AT must match', 'AUTH_FAILURES_PER_MINUTE must be']) {
      expect(message).toContain(offender);
    }
    // The schema's own complaint about the 1-character token is said once, by the secret check.
    expect(message).not.toContain('ADMIN_TOKENS item');
    for (const value of [LOCAL_ADMIN_TOKEN, 'sixteen-chars-ok', 'eight-ch']) expect(message).not.toContain(value);
    expect(message.match(/; /g)).toHaveLength(5);
  });

  it('names every missing secret at once rather than the first', () => {
    const message = refusal({ APP_ENV: 'production', RECONCILE_AT: '25:00' });
    expect(message).toMatch(/^Invalid configuration: ADMIN_TOKEN is required when APP_ENV=production; WEBHOOK_SECRET_KEY is required when APP_ENV=production; RECONCILE_AT must match/);
    // The schema's "must have required properties" says the same thing without the variables' names.
    expect(message).not.toContain('required properties');
  });

  it('leaves local with its documented defaults, which it still accepts when set explicitly', () => {
    expect(loadConfig({})).toMatchObject({ adminToken: LOCAL_ADMIN_TOKEN, webhookSecretKey: LOCAL_WEBHOOK_KEY });
    expect(loadConfig({ APP_ENV: 'local', ADMIN_TOKEN: LOCAL_ADMIN_TOKEN, WEBHOOK_SECRET_KEY: LOCAL_WEBHOOK_KEY, ADMIN_TOKENS: 'dorj:dorj-token' }).adminTokens).toHaveLength(1);
  });
});

describe('checks in flight per ministry system', () => {
  it('reaches 256 on PostgreSQL and 16 on the embedded database unless CONFIRM_CONCURRENCY_MAX_PER_SOURCE says otherwise', () => {
    expect(loadConfig({ DATABASE_URL: 'postgres://db/app' }).confirmConcurrencyMaxPerSource).toBe(256);
    expect(loadConfig({}).confirmConcurrencyMaxPerSource).toBe(16);
    expect(loadConfig({ DATABASE_URL: 'postgres://db/app', CONFIRM_CONCURRENCY_MAX_PER_SOURCE: '24' }).confirmConcurrencyMaxPerSource).toBe(24);
    expect(loadConfig({ CONFIRM_CONCURRENCY_MAX_PER_SOURCE: '40' }).confirmConcurrencyMaxPerSource).toBe(40);
    expect(() => loadConfig({ CONFIRM_CONCURRENCY_MAX_PER_SOURCE: '0' })).toThrow(/Invalid configuration/);
  });
});

describe('address limits and the admin Host rule', () => {
  it('defaults to 60 failed authentications and 120 landing-page requests a minute, and loopback names', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ authFailuresPerMinute: 60, shortLinkRateLimitPerMinute: 120, adminAllowedHosts: ['localhost', '127.0.0.1', '::1'] });
  });

  it('reads AUTH_FAILURES_PER_MINUTE, SHORT_LINK_RATE_LIMIT_PER_MINUTE and ADMIN_ALLOWED_HOSTS', () => {
    const config = loadConfig({ AUTH_FAILURES_PER_MINUTE: '10', SHORT_LINK_RATE_LIMIT_PER_MINUTE: '30', ADMIN_ALLOWED_HOSTS: 'admin.internal, localhost' });
    expect(config).toMatchObject({ authFailuresPerMinute: 10, shortLinkRateLimitPerMinute: 30, adminAllowedHosts: ['admin.internal', 'localhost'] });
    expect(() => loadConfig({ AUTH_FAILURES_PER_MINUTE: '0' })).toThrow(/Invalid configuration/);
    expect(() => loadConfig({ ADMIN_ALLOWED_HOSTS: 'a,,b' })).toThrow(/ADMIN_ALLOWED_HOSTS/);
  });

  it('trusts no proxy unless TRUST_PROXY names them', () => {
    expect(loadConfig({}).trustProxy).toBeNull();
    expect(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8' }).trustProxy).toBe('loopback, 10.0.0.0/8');
  });
});

describe('OpenAPI servers', () => {
  it('lists local from HOST/PORT, sandbox and production from PUBLIC_API_URL_*', () => {
    expect(openApiServers(loadConfig({}), '/api/v1').map((s) => s.url)).toEqual([
      'http://127.0.0.1:3000/api/v1',
      'https://sandbox.api.example.mn/api/v1',
      'https://api.example.mn/api/v1',
    ]);
    const config = loadConfig({ HOST: '0.0.0.0', PORT: '8080', PUBLIC_API_URL_SANDBOX: 'https://sb.pay.gov.mn/api/v1', PUBLIC_API_URL_PRODUCTION: 'https://pay.gov.mn/api/v1' });
    expect(openApiServers(config, '/api/v1').map((s) => s.url)).toEqual(['http://127.0.0.1:8080/api/v1', 'https://sb.pay.gov.mn/api/v1', 'https://pay.gov.mn/api/v1']);
    expect(() => loadConfig({ PUBLIC_API_URL_SANDBOX: 'sandbox.example.mn' })).toThrow(/Invalid configuration/);
  });
});

describe('the operator CLI settings', () => {
  it("calls the admin API where a local service listens by default, with the service's local token", () => {
    const service = loadConfig({});
    expect(loadCliConfig({})).toEqual({ adminUrl: `http://127.0.0.1:${service.adminPort}`, adminToken: service.adminToken });
  });

  it('takes ADMIN_PORT, or ADMIN_URL without its trailing slash, and ADMIN_TOKEN', () => {
    expect(loadCliConfig({ ADMIN_PORT: '4001', ADMIN_TOKEN: 'ops-token-123' })).toEqual({ adminUrl: 'http://127.0.0.1:4001', adminToken: 'ops-token-123' });
    expect(loadCliConfig({ ADMIN_PORT: '4001', ADMIN_URL: 'https://admin.example.mn/' }).adminUrl).toBe('https://admin.example.mn');
  });

  it('refuses an ADMIN_PORT that is not a number', () => {
    expect(() => loadCliConfig({ ADMIN_PORT: 'admin' })).toThrow('ADMIN_PORT must be an integer, got "admin"');
  });
});

describe('case turnaround settings', () => {
  it('gives paid_not_updated 24 hours and every other type 120 by default', () => {
    expect(loadConfig({}).caseTurnaroundHours).toEqual({ paid_not_updated: 24, paid_twice: 120, wrong_amount: 120, canceled_not_reversed: 120, other: 120 });
  });

  it('takes type=hours pairs, keeping the default of a type left out', () => {
    const hours = loadConfig({ CASE_TURNAROUND_HOURS: 'paid_twice=48, other=8' }).caseTurnaroundHours;
    expect(hours).toEqual({ paid_not_updated: 24, paid_twice: 48, wrong_amount: 120, canceled_not_reversed: 120, other: 8 });
  });

  it('refuses an unknown type, a pair without hours and a turnaround under an hour, naming the variable', () => {
    expect(() => loadConfig({ CASE_TURNAROUND_HOURS: 'lost=5' })).toThrow('CASE_TURNAROUND_HOURS names "lost", which is not a case type');
    expect(() => loadConfig({ CASE_TURNAROUND_HOURS: 'paid_twice' })).toThrow('CASE_TURNAROUND_HOURS must be a comma list of type=hours pairs');
    expect(() => loadConfig({ CASE_TURNAROUND_HOURS: 'paid_twice=0' })).toThrow(/CASE_TURNAROUND_HOURS/);
  });
});
