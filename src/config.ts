import { Type, type Static } from 'typebox';
import { Value } from 'typebox/value';

const AppEnv = Type.Union([Type.Literal('local'), Type.Literal('sandbox'), Type.Literal('production')]);
export type AppEnv = Static<typeof AppEnv>;

const Int = (dflt: number, min = 0) => Type.Integer({ default: dflt, minimum: min });

const ConfigSchema = Type.Object({
  appEnv: AppEnv,
  host: Type.String(),
  port: Int(3000),
  adminHost: Type.String(),
  adminPort: Int(3001),
  adminToken: Type.String({ minLength: 8 }),
  databaseUrl: Type.Union([Type.String(), Type.Null()]),
  dataDir: Type.String(),
  redisUrl: Type.Union([Type.String(), Type.Null()]),
  ministryUrls: Type.Object({
    mof: Type.Union([Type.String(), Type.Null()]),
    etax: Type.Union([Type.String(), Type.Null()]),
    police: Type.Union([Type.String(), Type.Null()]),
  }),
  ministryTimeoutMs: Int(3000, 1),
  circuitBreaker: Type.Object({ failureThreshold: Int(5, 1), openMs: Int(10_000, 1) }),
  simulator: Type.Object({
    port: Int(3100),
    fixtures: Type.Union([Type.String(), Type.Null()]),
    autoApproveMs: Int(5000),
  }),
  rateLimit: Type.Object({ perSecond: Int(5, 1), perMinute: Int(60, 1), perHour: Int(1000, 1) }),
  rateLimitFailOpen: Type.Boolean(),
  rateLimitRedisTimeoutMs: Int(200, 1),
  confirmPollMs: Int(2000, 10),
  confirmBackoffMaxMs: Int(60_000, 10),
  confirmConcurrencyPerSource: Int(4, 1),
  paymentExpiryMs: Int(30 * 60_000, 1000),
  webhookAllowPrivate: Type.Boolean(),
  webhookSecretKey: Type.String({ minLength: 16 }),
  /** Delay before each attempt: the first entry is the initial delivery, the rest are retries. */
  webhookRetryScheduleMs: Type.Array(Type.Integer({ minimum: 0 }), { minItems: 1 }),
  webhookTimeoutMs: Int(5000, 1),
  webhookPollMs: Int(1000, 10),
  /** Delivery attempts in flight per instance: overall, per webhook, per partner. */
  webhookConcurrency: Type.Object({ total: Int(32, 1), perEndpoint: Int(2, 1), perPartner: Int(8, 1) }),
  /** Webhooks a partner may have registered (deleted ones do not count). */
  webhookMaxPerPartner: Int(10, 1),
  fcm: Type.Object({
    projectId: Type.Union([Type.String(), Type.Null()]),
    accessToken: Type.Union([Type.String(), Type.Null()]),
    endpoint: Type.String(),
  }),
  bodyLimitBytes: Int(64 * 1024, 1024),
  shortUrlBase: Type.String(),
  logLevel: Type.String(),
  keyRotationGraceMs: Int(24 * 3600 * 1000),
  authCacheTtlMs: Int(2000),
  invoiceCache: Type.Object({ ttlMs: Int(30_000), maxEntries: Int(50_000) }),
  idempotencyTtlMs: Int(48 * 3600 * 1000, 24 * 3600 * 1000),
  /** Periods of at least a day: partners read the delivery log, and seconds mistaken for ms are refused. */
  retention: Type.Object({
    sweepMs: Int(60_000, 1000),
    batchSize: Int(1000, 1),
    webhookAttemptMs: Int(30 * 24 * 3600 * 1000, 24 * 3600 * 1000),
    eventMs: Int(90 * 24 * 3600 * 1000, 24 * 3600 * 1000),
  }),
  counterRollup: Type.Object({ intervalMs: Int(1000, 100), batchSize: Int(5000, 1) }),
});
export type Config = Static<typeof ConfigSchema>;

type Env = Record<string, string | undefined>;

const LOCAL_ADMIN_TOKEN = 'local-admin-token';
const LOCAL_WEBHOOK_KEY = 'local-webhook-secret-key-not-for-production';
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
/** DESIGN.md: immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, then failed. */
const DEFAULT_WEBHOOK_SCHEDULE_MS = [0, 5000, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR];

function int(env: Env, name: string, dflt: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n)) throw new Error(`${name} must be an integer, got "${raw}"`);
  return n;
}

function intList(env: Env, name: string, dflt: number[]): number[] {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  const values = raw.split(',').map((part) => Number(part.trim()));
  if (values.some((n) => !Number.isInteger(n) || n < 0)) throw new Error(`${name} must be a comma list of non-negative integers, got "${raw}"`);
  return values;
}

function bool(env: Env, name: string, dflt: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  if (['true', '1', 'yes'].includes(raw.toLowerCase())) return true;
  if (['false', '0', 'no'].includes(raw.toLowerCase())) return false;
  throw new Error(`${name} must be true or false, got "${raw}"`);
}

function str(env: Env, name: string): string | null {
  const raw = env[name];
  return raw === undefined || raw === '' ? null : raw;
}

function required(env: Env, name: string, appEnv: AppEnv, localDefault: string): string {
  const value = str(env, name);
  if (value !== null) return value;
  if (appEnv === 'local') return localDefault;
  throw new Error(`${name} is required when APP_ENV=${appEnv}`);
}

/** The only reader of process.env: everything else receives a validated Config. */
export function loadConfig(env: Env = process.env): Config {
  const appEnv = (str(env, 'APP_ENV') ?? 'local') as AppEnv;
  if (!Value.Check(AppEnv, appEnv)) throw new Error(`APP_ENV must be local, sandbox or production, got "${appEnv}"`);
  const port = int(env, 'PORT', 3000);
  const host = str(env, 'HOST') ?? '127.0.0.1';
  const config: Config = {
    appEnv,
    host,
    port,
    adminHost: str(env, 'ADMIN_HOST') ?? '127.0.0.1',
    adminPort: int(env, 'ADMIN_PORT', 3001),
    adminToken: required(env, 'ADMIN_TOKEN', appEnv, LOCAL_ADMIN_TOKEN),
    databaseUrl: str(env, 'DATABASE_URL'),
    dataDir: str(env, 'DATA_DIR') ?? './.data',
    redisUrl: str(env, 'REDIS_URL'),
    ministryUrls: {
      mof: str(env, 'MINISTRY_MOF_URL'),
      etax: str(env, 'MINISTRY_ETAX_URL'),
      police: str(env, 'MINISTRY_POLICE_URL'),
    },
    ministryTimeoutMs: int(env, 'MINISTRY_TIMEOUT_MS', 3000),
    circuitBreaker: {
      failureThreshold: int(env, 'CIRCUIT_BREAKER_FAILURES', 5),
      openMs: int(env, 'CIRCUIT_BREAKER_OPEN_MS', 10_000),
    },
    simulator: {
      port: int(env, 'SIMULATOR_PORT', 3100),
      fixtures: str(env, 'SIMULATOR_FIXTURES'),
      autoApproveMs: int(env, 'SIMULATOR_AUTO_APPROVE_MS', 5000),
    },
    rateLimit: {
      perSecond: int(env, 'RATE_LIMIT_PER_SECOND', 5),
      perMinute: int(env, 'RATE_LIMIT_PER_MINUTE', 60),
      perHour: int(env, 'RATE_LIMIT_PER_HOUR', 1000),
    },
    rateLimitFailOpen: bool(env, 'RATE_LIMIT_FAIL_OPEN', true),
    rateLimitRedisTimeoutMs: int(env, 'RATE_LIMIT_REDIS_TIMEOUT_MS', 200),
    confirmPollMs: int(env, 'CONFIRM_POLL_MS', 2000),
    confirmBackoffMaxMs: int(env, 'CONFIRM_BACKOFF_MAX_MS', 60_000),
    confirmConcurrencyPerSource: int(env, 'CONFIRM_CONCURRENCY_PER_SOURCE', 4),
    paymentExpiryMs: int(env, 'PAYMENT_EXPIRY_MS', 30 * 60_000),
    webhookAllowPrivate: bool(env, 'WEBHOOK_ALLOW_PRIVATE', appEnv === 'local'),
    webhookSecretKey: required(env, 'WEBHOOK_SECRET_KEY', appEnv, LOCAL_WEBHOOK_KEY),
    webhookRetryScheduleMs: intList(env, 'WEBHOOK_RETRY_SCHEDULE_MS', DEFAULT_WEBHOOK_SCHEDULE_MS),
    webhookTimeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS', 5000),
    webhookPollMs: int(env, 'WEBHOOK_POLL_MS', 1000),
    webhookConcurrency: {
      total: int(env, 'WEBHOOK_CONCURRENCY', 32),
      perEndpoint: int(env, 'WEBHOOK_CONCURRENCY_PER_ENDPOINT', 2),
      perPartner: int(env, 'WEBHOOK_CONCURRENCY_PER_PARTNER', 8),
    },
    webhookMaxPerPartner: int(env, 'WEBHOOK_MAX_PER_PARTNER', 10),
    fcm: {
      projectId: str(env, 'FCM_PROJECT_ID'),
      accessToken: str(env, 'FCM_ACCESS_TOKEN'),
      endpoint: str(env, 'FCM_ENDPOINT') ?? 'https://fcm.googleapis.com',
    },
    bodyLimitBytes: int(env, 'BODY_LIMIT_BYTES', 64 * 1024),
    shortUrlBase: str(env, 'SHORT_URL_BASE') ?? `http://${host}:${port}/q`,
    logLevel: str(env, 'LOG_LEVEL') ?? 'info',
    keyRotationGraceMs: int(env, 'KEY_ROTATION_GRACE_MS', 24 * 3600 * 1000),
    authCacheTtlMs: int(env, 'AUTH_CACHE_TTL_MS', 2000),
    invoiceCache: {
      ttlMs: int(env, 'INVOICE_CACHE_TTL_MS', 30_000),
      maxEntries: int(env, 'INVOICE_CACHE_MAX_ENTRIES', 50_000),
    },
    idempotencyTtlMs: int(env, 'IDEMPOTENCY_TTL_MS', 48 * 3600 * 1000),
    retention: {
      sweepMs: int(env, 'RETENTION_SWEEP_MS', 60_000),
      batchSize: int(env, 'RETENTION_BATCH_SIZE', 1000),
      webhookAttemptMs: int(env, 'WEBHOOK_ATTEMPT_RETENTION_MS', 30 * 24 * HOUR),
      eventMs: int(env, 'EVENT_RETENTION_MS', 90 * 24 * HOUR),
    },
    counterRollup: {
      intervalMs: int(env, 'COUNTER_ROLLUP_MS', 1000),
      batchSize: int(env, 'COUNTER_ROLLUP_BATCH_SIZE', 5000),
    },
  };
  if (!Value.Check(ConfigSchema, config)) {
    const errors = [...Value.Errors(ConfigSchema, config)].map((e) => `${e.instancePath} ${e.message}`);
    throw new Error(`Invalid configuration: ${errors.join('; ')}`);
  }
  return config;
}

/**
 * Config for tests: local defaults, in-memory PGlite, and the real PostgreSQL / Redis only when
 * the environment names them (that is how CI runs the same suites on both paths).
 */
export function testConfig(overrides: Partial<Config> = {}, env: Env = process.env): Config {
  const base = loadConfig({
    DATA_DIR: 'memory://',
    LOG_LEVEL: env.TEST_LOG_LEVEL ?? 'silent',
    DATABASE_URL: env.DATABASE_URL,
    REDIS_URL: env.REDIS_URL,
    // High enough that suites bursting requests are never limited; rate-limit tests pass their own.
    RATE_LIMIT_PER_SECOND: '1000000',
    RATE_LIMIT_PER_MINUTE: '1000000',
    RATE_LIMIT_PER_HOUR: '1000000',
  });
  // Suites that inject faults on purpose would otherwise trip the breaker for later tests.
  return { ...base, circuitBreaker: { failureThreshold: 1000, openMs: 1000 }, ...overrides };
}

export interface CliConfig {
  adminUrl: string;
  adminToken: string;
}

/** The operator CLI's settings, read here so process.env stays in this one module. */
export function loadCliConfig(env: Env = process.env): CliConfig {
  const port = int(env, 'ADMIN_PORT', 3001);
  return {
    adminUrl: (str(env, 'ADMIN_URL') ?? `http://127.0.0.1:${port}`).replace(/\/$/, ''),
    adminToken: str(env, 'ADMIN_TOKEN') ?? LOCAL_ADMIN_TOKEN,
  };
}
