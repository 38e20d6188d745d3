import { Type, type Static } from 'typebox';
import { Value } from 'typebox/value';
import { APP_ENVS, PROCESS_ROLES, type AppEnv } from './domain/vocabulary.js';

const AppEnvSchema = Type.Enum(APP_ENVS);

const Int = (dflt: number, min = 0) => Type.Integer({ default: dflt, minimum: min });
const Text = (dflt: string) => Type.String({ default: dflt });
const Flag = (dflt: boolean) => Type.Boolean({ default: dflt });
const Optional = () => Type.Union([Type.String(), Type.Null()], { default: null });

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const LOCAL_ADMIN_TOKEN = 'local-admin-token';
const LOCAL_WEBHOOK_KEY = 'local-webhook-secret-key-not-for-production';

/** Every setting and its default, once: loadConfig fills what the environment leaves out from here. */
const ConfigSchema = Type.Object({
  appEnv: AppEnvSchema,
  /** `all` (one process does everything), `api` (listeners, no background work) or `worker` (background work, health and metrics). */
  processRole: Type.Union(PROCESS_ROLES.map((r) => Type.Literal(r)), { default: 'all' }),
  host: Text('127.0.0.1'),
  port: Int(3000),
  adminHost: Text('127.0.0.1'),
  adminPort: Int(3001),
  adminToken: Type.String({ minLength: 8 }),
  /** Named operators (ADMIN_TOKENS="name:token,..."); ADMIN_TOKEN stays valid as operator `admin`. */
  adminTokens: Type.Array(Type.Object({ name: Type.String({ pattern: '^[A-Za-z0-9._-]{1,64}$' }), token: Type.String({ minLength: 8 }) }), { default: [] }),
  /** Host names the admin listener answers besides its own address; any other Host gets 421 (DNS rebinding). */
  adminAllowedHosts: Type.Array(Type.String({ minLength: 1 }), { default: ['localhost', '127.0.0.1', '::1'] }),
  databaseUrl: Optional(),
  /** How long a query waits for a PostgreSQL connection before the request answers 503. */
  dbConnectTimeoutMs: Int(5000, 100),
  dataDir: Text('./.data'),
  redisUrl: Optional(),
  ministryUrls: Type.Object({ mof: Optional(), etax: Optional(), police: Optional() }, { default: {} }),
  ministryTimeoutMs: Int(3000, 1),
  circuitBreaker: Type.Object({ failureThreshold: Int(5, 1), openMs: Int(10_000, 1) }, { default: {} }),
  simulator: Type.Object({ port: Int(3100), fixtures: Optional(), autoApproveMs: Int(5000) }, { default: {} }),
  rateLimit: Type.Object({ perSecond: Int(5, 1), perMinute: Int(60, 1), perHour: Int(1000, 1) }, { default: {} }),
  rateLimitFailOpen: Flag(true),
  rateLimitRedisTimeoutMs: Int(200, 1),
  /** Failed authentications per client address per minute; past it, requests are refused before any key lookup. */
  authFailuresPerMinute: Int(60, 1),
  /** Requests per client address per minute to the QR landing page and its status poll (no key to limit by). */
  shortLinkRateLimitPerMinute: Int(120, 1),
  /**
   * Addresses or CIDRs (or proxy-addr names such as `loopback`) of the proxies in front of the
   * partner listener, whose X-Forwarded-For names the client; unset, the connection's address is the client.
   */
  trustProxy: Optional(),
  confirmPollMs: Int(2000, 10),
  confirmBackoffMaxMs: Int(60_000, 10),
  /** Each ministry system's floor and starting limit of checks in flight per instance; the limit adapts above it. */
  confirmConcurrencyPerSource: Int(4, 1),
  /** The most checks in flight one ministry system's adaptive limit can reach per instance. */
  /**
   * 16 by default: in a process that also serves partners, more checks in flight take the CPU the
   * requests need (bench/README.md); a PROCESS_ROLE=worker process can take 64 or more.
   */
  confirmConcurrencyMaxPerSource: Int(16, 1),
  paymentExpiryMs: Int(30 * MINUTE, 1000),
  /** Defaults to true only when APP_ENV=local. */
  webhookAllowPrivate: Type.Boolean(),
  webhookSecretKey: Type.String({ minLength: 16 }),
  /**
   * Delay before each attempt: the first entry is the initial delivery, the rest are retries.
   * By default: immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, then failed.
   */
  webhookRetryScheduleMs: Type.Array(Type.Integer({ minimum: 0 }), {
    minItems: 1,
    default: [0, 5000, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR],
  }),
  webhookTimeoutMs: Int(5000, 1),
  webhookPollMs: Int(1000, 10),
  /** Delivery attempts in flight per instance: overall, per webhook, per partner. */
  webhookConcurrency: Type.Object({ total: Int(32, 1), perEndpoint: Int(2, 1), perPartner: Int(8, 1) }, { default: {} }),
  /** Delivery attempts in flight per instance to webhooks whose last attempt failed or timed out (one per webhook). */
  webhookSlowConcurrency: Int(8, 1),
  /** Webhooks a partner may have registered (deleted ones do not count). */
  webhookMaxPerPartner: Int(10, 1),
  /** How long a rotated-out webhook secret still signs deliveries beside the new one. */
  webhookSecretRotationGraceMs: Int(DAY),
  /** A webhook whose every attempt has failed for this long is disabled (as Svix does after 5 days). */
  webhookDisableAfterMs: Int(5 * DAY, MINUTE),
  /** How often the service looks for webhooks to disable. */
  webhookHealthCheckMs: Int(MINUTE, 1000),
  fcm: Type.Object({ projectId: Optional(), accessToken: Optional(), endpoint: Text('https://fcm.googleapis.com') }, { default: {} }),
  bodyLimitBytes: Int(64 * 1024, 1024),
  /** Defaults to the API's own address: http://HOST:PORT/q. */
  shortUrlBase: Type.String(),
  /** The public base URLs (with /api/v1) the OpenAPI document lists as its sandbox and production servers. */
  publicApiUrls: Type.Object(
    {
      sandbox: Type.String({ pattern: '^https?://', default: 'https://sandbox.api.example.mn/api/v1' }),
      production: Type.String({ pattern: '^https?://', default: 'https://api.example.mn/api/v1' }),
    },
    { default: {} },
  ),
  logLevel: Text('info'),
  keyRotationGraceMs: Int(DAY),
  authCacheTtlMs: Int(2000),
  invoiceCache: Type.Object({ ttlMs: Int(30_000), maxEntries: Int(50_000) }, { default: {} }),
  idempotencyTtlMs: Int(2 * DAY, DAY),
  /** Periods of at least a day: partners read the delivery log, and seconds mistaken for ms are refused. */
  retention: Type.Object(
    {
      sweepMs: Int(MINUTE, 1000),
      batchSize: Int(1000, 1),
      webhookAttemptMs: Int(30 * DAY, DAY),
      eventMs: Int(90 * DAY, DAY),
    },
    { default: {} },
  ),
  counterRollup: Type.Object({ intervalMs: Int(1000, 100), batchSize: Int(5000, 1) }, { default: {} }),
  /** Daily reconciliation: from `at` (Mongolian time, HH:MM) the previous finance day is reconciled. */
  reconciliation: Type.Object(
    {
      at: Type.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$', default: '02:00' }),
      retryMs: Int(15 * MINUTE, 1000),
      leaseMs: Int(5 * MINUTE, 1000),
      waitMs: Int(MINUTE),
      pollMs: Int(MINUTE, 100),
    },
    { default: {} },
  ),
});
export type Config = Static<typeof ConfigSchema>;

type Env = Record<string, string | undefined>;

function str(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw === '' ? undefined : raw;
}

function int(env: Env, name: string): number | undefined {
  const raw = str(env, name);
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n)) throw new Error(`${name} must be an integer, got "${raw}"`);
  return n;
}

function intList(env: Env, name: string): number[] | undefined {
  const raw = str(env, name);
  if (raw === undefined) return undefined;
  const values = raw.split(',').map((part) => Number(part.trim()));
  if (values.some((n) => !Number.isInteger(n) || n < 0)) throw new Error(`${name} must be a comma list of non-negative integers, got "${raw}"`);
  return values;
}

/** A comma list of non-empty items. */
function textList(env: Env, name: string): string[] | undefined {
  const raw = str(env, name);
  if (raw === undefined) return undefined;
  const items = raw.split(',').map((part) => part.trim());
  if (items.some((item) => item === '')) throw new Error(`${name} must be a comma list of non-empty names, got "${raw}"`);
  return items;
}

/** "name:token,name:token": the operators and their tokens. */
function namedTokens(env: Env, name: string): { name: string; token: string }[] | undefined {
  const raw = str(env, name);
  if (raw === undefined) return undefined;
  return raw.split(',').map((pair) => {
    const at = pair.indexOf(':');
    if (at <= 0) throw new Error(`${name} must be a comma list of name:token pairs`);
    return { name: pair.slice(0, at).trim(), token: pair.slice(at + 1).trim() };
  });
}

function bool(env: Env, name: string): boolean | undefined {
  const raw = str(env, name);
  if (raw === undefined) return undefined;
  if (['true', '1', 'yes'].includes(raw.toLowerCase())) return true;
  if (['false', '0', 'no'].includes(raw.toLowerCase())) return false;
  throw new Error(`${name} must be true or false, got "${raw}"`);
}

function required(env: Env, name: string, appEnv: AppEnv, localDefault: string): string {
  const value = str(env, name);
  if (value !== undefined) return value;
  if (appEnv === 'local') return localDefault;
  throw new Error(`${name} is required when APP_ENV=${appEnv}`);
}

/** What the environment says, setting by setting; a setting it leaves out stays undefined. */
function fromEnv(env: Env, appEnv: AppEnv) {
  return {
    appEnv,
    processRole: str(env, 'PROCESS_ROLE'),
    host: str(env, 'HOST'),
    port: int(env, 'PORT'),
    adminHost: str(env, 'ADMIN_HOST'),
    adminPort: int(env, 'ADMIN_PORT'),
    adminToken: required(env, 'ADMIN_TOKEN', appEnv, LOCAL_ADMIN_TOKEN),
    adminTokens: namedTokens(env, 'ADMIN_TOKENS'),
    adminAllowedHosts: textList(env, 'ADMIN_ALLOWED_HOSTS'),
    databaseUrl: str(env, 'DATABASE_URL'),
    dbConnectTimeoutMs: int(env, 'DB_CONNECT_TIMEOUT_MS'),
    dataDir: str(env, 'DATA_DIR'),
    redisUrl: str(env, 'REDIS_URL'),
    ministryUrls: { mof: str(env, 'MINISTRY_MOF_URL'), etax: str(env, 'MINISTRY_ETAX_URL'), police: str(env, 'MINISTRY_POLICE_URL') },
    ministryTimeoutMs: int(env, 'MINISTRY_TIMEOUT_MS'),
    circuitBreaker: { failureThreshold: int(env, 'CIRCUIT_BREAKER_FAILURES'), openMs: int(env, 'CIRCUIT_BREAKER_OPEN_MS') },
    simulator: {
      port: int(env, 'SIMULATOR_PORT'),
      fixtures: str(env, 'SIMULATOR_FIXTURES'),
      autoApproveMs: int(env, 'SIMULATOR_AUTO_APPROVE_MS'),
    },
    rateLimit: {
      perSecond: int(env, 'RATE_LIMIT_PER_SECOND'),
      perMinute: int(env, 'RATE_LIMIT_PER_MINUTE'),
      perHour: int(env, 'RATE_LIMIT_PER_HOUR'),
    },
    rateLimitFailOpen: bool(env, 'RATE_LIMIT_FAIL_OPEN'),
    rateLimitRedisTimeoutMs: int(env, 'RATE_LIMIT_REDIS_TIMEOUT_MS'),
    authFailuresPerMinute: int(env, 'AUTH_FAILURES_PER_MINUTE'),
    shortLinkRateLimitPerMinute: int(env, 'SHORT_LINK_RATE_LIMIT_PER_MINUTE'),
    trustProxy: str(env, 'TRUST_PROXY'),
    confirmPollMs: int(env, 'CONFIRM_POLL_MS'),
    confirmBackoffMaxMs: int(env, 'CONFIRM_BACKOFF_MAX_MS'),
    confirmConcurrencyPerSource: int(env, 'CONFIRM_CONCURRENCY_PER_SOURCE'),
    confirmConcurrencyMaxPerSource: int(env, 'CONFIRM_CONCURRENCY_MAX_PER_SOURCE'),
    paymentExpiryMs: int(env, 'PAYMENT_EXPIRY_MS'),
    webhookAllowPrivate: bool(env, 'WEBHOOK_ALLOW_PRIVATE') ?? appEnv === 'local',
    webhookSecretKey: required(env, 'WEBHOOK_SECRET_KEY', appEnv, LOCAL_WEBHOOK_KEY),
    webhookRetryScheduleMs: intList(env, 'WEBHOOK_RETRY_SCHEDULE_MS'),
    webhookTimeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS'),
    webhookPollMs: int(env, 'WEBHOOK_POLL_MS'),
    webhookConcurrency: {
      total: int(env, 'WEBHOOK_CONCURRENCY'),
      perEndpoint: int(env, 'WEBHOOK_CONCURRENCY_PER_ENDPOINT'),
      perPartner: int(env, 'WEBHOOK_CONCURRENCY_PER_PARTNER'),
    },
    webhookSlowConcurrency: int(env, 'WEBHOOK_SLOW_CONCURRENCY'),
    webhookMaxPerPartner: int(env, 'WEBHOOK_MAX_PER_PARTNER'),
    webhookSecretRotationGraceMs: int(env, 'WEBHOOK_SECRET_ROTATION_GRACE_MS'),
    webhookDisableAfterMs: int(env, 'WEBHOOK_DISABLE_AFTER_MS'),
    webhookHealthCheckMs: int(env, 'WEBHOOK_HEALTH_CHECK_MS'),
    fcm: { projectId: str(env, 'FCM_PROJECT_ID'), accessToken: str(env, 'FCM_ACCESS_TOKEN'), endpoint: str(env, 'FCM_ENDPOINT') },
    bodyLimitBytes: int(env, 'BODY_LIMIT_BYTES'),
    shortUrlBase: str(env, 'SHORT_URL_BASE'),
    publicApiUrls: { sandbox: str(env, 'PUBLIC_API_URL_SANDBOX'), production: str(env, 'PUBLIC_API_URL_PRODUCTION') },
    logLevel: str(env, 'LOG_LEVEL'),
    keyRotationGraceMs: int(env, 'KEY_ROTATION_GRACE_MS'),
    authCacheTtlMs: int(env, 'AUTH_CACHE_TTL_MS'),
    invoiceCache: { ttlMs: int(env, 'INVOICE_CACHE_TTL_MS'), maxEntries: int(env, 'INVOICE_CACHE_MAX_ENTRIES') },
    idempotencyTtlMs: int(env, 'IDEMPOTENCY_TTL_MS'),
    retention: {
      sweepMs: int(env, 'RETENTION_SWEEP_MS'),
      batchSize: int(env, 'RETENTION_BATCH_SIZE'),
      webhookAttemptMs: int(env, 'WEBHOOK_ATTEMPT_RETENTION_MS'),
      eventMs: int(env, 'EVENT_RETENTION_MS'),
    },
    counterRollup: { intervalMs: int(env, 'COUNTER_ROLLUP_MS'), batchSize: int(env, 'COUNTER_ROLLUP_BATCH_SIZE') },
    reconciliation: {
      at: str(env, 'RECONCILE_AT'),
      retryMs: int(env, 'RECONCILE_RETRY_MS'),
      leaseMs: int(env, 'RECONCILE_LEASE_MS'),
      waitMs: int(env, 'RECONCILE_WAIT_MS'),
      pollMs: int(env, 'RECONCILE_POLL_MS'),
    },
  };
}

/** Drops unset settings so the schema's defaults fill them. */
function withoutUnset(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [k, withoutUnset(v)]),
  );
}

/** The only reader of process.env: everything else receives a validated Config. */
export function loadConfig(env: Env = process.env): Config {
  const appEnv = str(env, 'APP_ENV') ?? 'local';
  if (!Value.Check(AppEnvSchema, appEnv)) throw new Error(`APP_ENV must be local, sandbox or production, got "${appEnv}"`);
  const config = Value.Default(ConfigSchema, withoutUnset(fromEnv(env, appEnv))) as Config;
  config.shortUrlBase ??= `http://${config.host}:${config.port}/q`;
  if (!Value.Check(ConfigSchema, config)) {
    const errors = [...Value.Errors(ConfigSchema, config)].map((e) => `${e.instancePath} ${e.message}`);
    throw new Error(`Invalid configuration: ${errors.join('; ')}`);
  }
  return config;
}

export interface CliConfig {
  adminUrl: string;
  adminToken: string;
}

/** The operator CLI's settings, read here so process.env stays in this one module. */
export function loadCliConfig(env: Env = process.env): CliConfig {
  const port = Value.Default(ConfigSchema.properties.adminPort, int(env, 'ADMIN_PORT')) as number;
  return {
    adminUrl: (str(env, 'ADMIN_URL') ?? `http://127.0.0.1:${port}`).replace(/\/$/, ''),
    adminToken: str(env, 'ADMIN_TOKEN') ?? LOCAL_ADMIN_TOKEN,
  };
}
