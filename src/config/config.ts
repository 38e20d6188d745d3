import { Type, type Static, type TObject, type TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { APP_ENVS, CASE_TYPES, PROCESS_ROLES, type AppEnv, type CaseType } from '../domain/vocabulary.js';
import { DEFAULT_CASE_TURNAROUND_HOURS } from '../domain/case-status.js';
import { TRACE_SAMPLERS } from '../domain/trace-context.js';
import { DEFAULT_ADMIN_PORT, int, LOCAL_ADMIN_TOKEN, processEnv, stdoutIsTerminal, str, WORKER_ADMIN_PORT, type Env } from './process-env.js';
import { ConfigError } from './start-failure.js';

const AppEnvSchema = Type.Enum(APP_ENVS);

const Int = (dflt: number, min = 0) => Type.Integer({ default: dflt, minimum: min });
const Text = (dflt: string) => Type.String({ default: dflt });
const Flag = (dflt: boolean) => Type.Boolean({ default: dflt });
const Optional = () => Type.Union([Type.String(), Type.Null()], { default: null });

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const LOCAL_WEBHOOK_KEY = 'local-webhook-secret-key-not-for-production';

function float(env: Env, name: string): number | undefined {
  const raw = str(env, name);
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new Error(`${name} must be a number, got "${raw}"`);
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

/** "type=hours,type=hours": hours to answer each type of case; a type left out keeps its default. */
function caseHours(env: Env, name: string): Record<string, number> | undefined {
  const raw = str(env, name);
  if (raw === undefined) return undefined;
  return Object.fromEntries(
    raw.split(',').map((pair) => {
      const [type, hours, ...rest] = pair.split('=').map((part) => part.trim());
      const n = Number(hours);
      if (!type || rest.length > 0 || !Number.isInteger(n)) throw new Error(`${name} must be a comma list of type=hours pairs, got "${raw}"`);
      if (!(CASE_TYPES as readonly string[]).includes(type)) throw new Error(`${name} names "${type}", which is not a case type (${CASE_TYPES.join(', ')})`);
      return [type, n];
    }),
  );
}

function bool(env: Env, name: string): boolean | undefined {
  const raw = str(env, name);
  if (raw === undefined) return undefined;
  if (['true', '1', 'yes'].includes(raw.toLowerCase())) return true;
  if (['false', '0', 'no'].includes(raw.toLowerCase())) return false;
  throw new Error(`${name} must be true or false, got "${raw}"`);
}

/**
 * Reads one variable; undefined when the environment leaves it out (the schema's default applies).
 * Throws, naming the variable, when its text is not of its kind; `terminal` says whether stdout is one.
 */
type Reader = (env: Env, name: string, appEnv: AppEnv, terminal: boolean) => unknown;

/** A secret a setting's value holds: where in the value it sits (a JSON pointer) and how an error names it. */
interface HeldSecret {
  at: string;
  label: string;
  value: unknown;
}

/** The secrets of a setting's value, so they are checked outside `local` and never echoed. */
type SecretsOf = (value: unknown, env: string) => HeldSecret[];

/** One setting: the variable it is read from, its schema (with its default), how its text is read, and any secrets it holds. */
interface Setting<S extends TSchema = TSchema> {
  env: string;
  schema: S;
  read: Reader;
  secrets?: SecretsOf;
}

const setting = <S extends TSchema>(env: string, schema: S, read: Reader = str, secrets?: SecretsOf): Setting<S> => ({ env, schema, read, secrets });
const number = <S extends TSchema>(env: string, schema: S) => setting(env, schema, int);

/**
 * A required secret that only `local` may leave out, where it has a fixed development value;
 * elsewhere a missing one is reported by secretErrors beside every other invalid setting.
 */
const secret = (localDefault: string): Reader => (env, name, appEnv) => str(env, name) ?? (appEnv === 'local' ? localDefault : undefined);

/** The whole value is the secret (and, when secret() reads it, required outside `local`). */
const wholeSecret: SecretsOf = (value, env) => [{ at: '', label: env, value }];

/** Each operator's token; named by position, since a pair written the wrong way round would put the token in the name. */
const operatorTokens: SecretsOf = (value, env) =>
  Array.isArray(value) ? value.map((pair: { token?: unknown }, i) => ({ at: `/${i}/token`, label: `${env} (pair ${i + 1})`, value: pair.token })) : [];

/**
 * Outside `local`, the fewest characters any secret may have (`openssl rand -hex 16` makes 32).
 * The schema's own minimums are lower so that local starts and tests may use short ones.
 */
export const SECRET_MIN_LENGTH = 32;

/**
 * Secret values anyone can read, here and in the README: a local start's defaults. Outside `local`
 * every secret setting refuses all of them, not only its own (an operator pasting the local admin
 * token into ADMIN_TOKENS is refused too).
 */
const PUBLIC_SECRETS: ReadonlySet<string> = new Set([LOCAL_ADMIN_TOKEN, LOCAL_WEBHOOK_KEY]);

interface SettingTree {
  readonly [key: string]: Setting | SettingTree;
}

/** The schema of a tree of settings: each setting's own, each branch an object with defaults. */
type SchemaOf<T> = T extends Setting<infer S> ? S : T extends SettingTree ? TObject<{ -readonly [K in keyof T]: SchemaOf<T[K]> }> : never;

/**
 * Every setting once: its variable, schema, default and meaning (the README's configuration
 * table describes them for operators; test/unit/config-docs.test.ts keeps the two together).
 */
const SETTINGS = {
  appEnv: setting('APP_ENV', Type.Enum(APP_ENVS, { default: 'local' })),
  /** `all` (one process does everything), `api` (listeners, no background work) or `worker` (background work, health and metrics). */
  processRole: setting('PROCESS_ROLE', Type.Union(PROCESS_ROLES.map((r) => Type.Literal(r)), { default: 'all' })),
  host: setting('HOST', Text('127.0.0.1')),
  port: number('PORT', Int(3000)),
  adminHost: setting('ADMIN_HOST', Text('127.0.0.1')),
  /** 3002 by default for PROCESS_ROLE=worker, so a worker beside an API on one host needs no setting of its own. */
  adminPort: setting('ADMIN_PORT', Int(DEFAULT_ADMIN_PORT), (env, name) => int(env, name) ?? (str(env, 'PROCESS_ROLE') === 'worker' ? WORKER_ADMIN_PORT : undefined)),
  adminToken: setting('ADMIN_TOKEN', Type.String({ minLength: 8 }), secret(LOCAL_ADMIN_TOKEN), wholeSecret),
  /** Named operators (ADMIN_TOKENS="name:token,..."); ADMIN_TOKEN stays valid as operator `admin`. */
  adminTokens: setting(
    'ADMIN_TOKENS',
    Type.Array(Type.Object({ name: Type.String({ pattern: '^[A-Za-z0-9._-]{1,64}$' }), token: Type.String({ minLength: 8 }) }), { default: [] }),
    namedTokens,
    operatorTokens,
  ),
  /** Host names the admin listener answers besides its own address; any other Host gets 421 (DNS rebinding). */
  adminAllowedHosts: setting('ADMIN_ALLOWED_HOSTS', Type.Array(Type.String({ minLength: 1 }), { default: ['localhost', '127.0.0.1', '::1'] }), textList),
  databaseUrl: setting('DATABASE_URL', Optional()),
  /**
   * A streaming replica of DATABASE_URL (optional): the operator's lists and reports, the partners'
   * reports and events list read from it while its replay lag is below REPLICA_MAX_LAG_MS.
   */
  databaseReplicaUrl: setting('DATABASE_REPLICA_URL', Optional()),
  replicaMaxLagMs: number('REPLICA_MAX_LAG_MS', Int(2000, 1)),
  /** How often the replica's replay lag is measured. */
  replicaProbeMs: number('REPLICA_PROBE_MS', Int(500, 10)),
  /** How long a query waits for a PostgreSQL connection before the request answers 503. */
  dbConnectTimeoutMs: number('DB_CONNECT_TIMEOUT_MS', Int(5000, 100)),
  /**
   * The deadline of every PostgreSQL query: past it the query fails as "database unavailable" and
   * its connection is destroyed. Also the server's statement_timeout and idle_in_transaction_session_timeout.
   */
  dbQueryTimeoutMs: number('DB_QUERY_TIMEOUT_MS', Int(10_000, 100)),
  /** Silence on a PostgreSQL connection before TCP keepalive starts probing it. */
  dbKeepAliveMs: number('DB_KEEPALIVE_MS', Int(10_000, 1000)),
  /** The deadline of readiness's own database ping. */
  readyDbTimeoutMs: number('READY_DB_TIMEOUT_MS', Int(1000, 50)),
  dataDir: setting('DATA_DIR', Text('./.data')),
  /**
   * Whether a start applies pending migrations; true by default only when APP_ENV=local. Off, the
   * migrations are a deploy step of their own (`npm run migrate`) and a start on an older schema
   * is refused (docs/deployment.md, Migrations).
   */
  migrateOnStart: setting('MIGRATE_ON_START', Type.Boolean(), (env, name, appEnv) => bool(env, name) ?? appEnv === 'local'),
  redisUrl: setting('REDIS_URL', Optional()),
  ministryUrls: {
    mof: setting('MINISTRY_MOF_URL', Optional()),
    etax: setting('MINISTRY_ETAX_URL', Optional()),
    police: setting('MINISTRY_POLICE_URL', Optional()),
  },
  ministryTimeoutMs: number('MINISTRY_TIMEOUT_MS', Int(3000, 1)),
  /** The most bytes of one ministry answer read (a settlement has its own larger bound); past it the answer is malformed. */
  ministryMaxResponseBytes: number('MINISTRY_MAX_RESPONSE_BYTES', Int(1024 * 1024, 1024)),
  circuitBreaker: { failureThreshold: number('CIRCUIT_BREAKER_FAILURES', Int(5, 1)), openMs: number('CIRCUIT_BREAKER_OPEN_MS', Int(10_000, 1)) },
  simulator: {
    port: number('SIMULATOR_PORT', Int(3100)),
    fixtures: setting('SIMULATOR_FIXTURES', Optional()),
    autoApproveMs: number('SIMULATOR_AUTO_APPROVE_MS', Int(5000)),
  },
  rateLimit: {
    perSecond: number('RATE_LIMIT_PER_SECOND', Int(5, 1)),
    perMinute: number('RATE_LIMIT_PER_MINUTE', Int(60, 1)),
    perHour: number('RATE_LIMIT_PER_HOUR', Int(1000, 1)),
  },
  rateLimitFailOpen: setting('RATE_LIMIT_FAIL_OPEN', Flag(true), bool),
  rateLimitRedisTimeoutMs: number('RATE_LIMIT_REDIS_TIMEOUT_MS', Int(200, 1)),
  /** Failed authentications per client address per minute; past it, requests are refused before any key lookup. */
  authFailuresPerMinute: number('AUTH_FAILURES_PER_MINUTE', Int(60, 1)),
  /** Requests per client address per minute to the QR landing page and its status poll (no key to limit by). */
  shortLinkRateLimitPerMinute: number('SHORT_LINK_RATE_LIMIT_PER_MINUTE', Int(120, 1)),
  /**
   * Addresses or CIDRs (or proxy-addr names such as `loopback`) of the proxies in front of the
   * partner listener, whose X-Forwarded-For names the client; unset, the connection's address is the client.
   */
  trustProxy: setting('TRUST_PROXY', Optional()),
  confirmPollMs: number('CONFIRM_POLL_MS', Int(2000, 10)),
  /** How long a partner's live read waits for a slot of its ministry system when the system's limit is full; then it answers the stored status. */
  confirmLiveWaitMs: number('CONFIRM_LIVE_WAIT_MS', Int(2000, 0)),
  confirmBackoffMaxMs: number('CONFIRM_BACKOFF_MAX_MS', Int(60_000, 10)),
  /** Each ministry system's floor and starting limit of checks in flight per instance; the limit adapts above it. */
  confirmConcurrencyPerSource: number('CONFIRM_CONCURRENCY_PER_SOURCE', Int(4, 1)),
  /**
   * The most checks in flight one ministry system's adaptive limit can reach per instance: by
   * Little's law a system answering checks in 1.5 s needs 36 in flight for 24 payments a second
   * checked once each, and a payment is often checked twice (once before its approval). With etax
   * at 1.5 s and 44 etax payments a second (132 in all), its approval -> webhook p99 was 5.7 s at
   * 128 and 1.9 s at 256, with POST /payments p50 as low. The embedded database runs every
   * statement on the event loop the requests need, so there the checks stay fewer.
   */
  confirmConcurrencyMaxPerSource: setting('CONFIRM_CONCURRENCY_MAX_PER_SOURCE', Int(16, 1), (env, name) => int(env, name) ?? (str(env, 'DATABASE_URL') ? 256 : undefined)),
  paymentExpiryMs: number('PAYMENT_EXPIRY_MS', Int(30 * MINUTE, 1000)),
  /**
   * A payment whose submit's outcome is unknown (a timeout, a crash, a lapsed lease) stays pending
   * and its ministry is asked about it this long after its creation, so a submit held or retried on
   * its way outlasts the wait; only then, still unknown there, is it failed and a cancel owed.
   */
  paymentUnknownOutcomeMs: number('PAYMENT_UNKNOWN_OUTCOME_MS', Int(30 * MINUTE, 1000)),
  /** True by default only when APP_ENV=local. */
  webhookAllowPrivate: setting('WEBHOOK_ALLOW_PRIVATE', Type.Boolean(), (env, name, appEnv) => bool(env, name) ?? appEnv === 'local'),
  webhookSecretKey: setting('WEBHOOK_SECRET_KEY', Type.String({ minLength: 16 }), secret(LOCAL_WEBHOOK_KEY), wholeSecret),
  /**
   * Delay before each attempt: the first entry is the initial delivery, the rest are retries.
   * By default: immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, then failed.
   */
  webhookRetryScheduleMs: setting(
    'WEBHOOK_RETRY_SCHEDULE_MS',
    Type.Array(Type.Integer({ minimum: 0 }), { minItems: 1, default: [0, 5000, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR] }),
    intList,
  ),
  webhookTimeoutMs: number('WEBHOOK_TIMEOUT_MS', Int(5000, 1)),
  webhookPollMs: number('WEBHOOK_POLL_MS', Int(1000, 10)),
  /**
   * Hours a case has to be answered, by type (`paid_not_updated=24,paid_twice=120`); past them an
   * unanswered case is escalated. A type left out keeps its default: 24 for paid_not_updated, 120 for the others.
   */
  caseTurnaroundHours: setting(
    'CASE_TURNAROUND_HOURS',
    Type.Object(
      Object.fromEntries(CASE_TYPES.map((type) => [type, Int(DEFAULT_CASE_TURNAROUND_HOURS[type], 1)])) as Record<CaseType, ReturnType<typeof Int>>,
      { additionalProperties: false, default: {} },
    ),
    caseHours,
  ),
  /**
   * How often the case job gathers the evidence of new cases and escalates the ones past due. A
   * case opened on a process that runs the job is gathered at once; this bounds the wait on an
   * API-only process. Longer than a pass's ministry calls, so a slow ministry does not read as a stalled loop.
   */
  casePollMs: number('CASE_POLL_MS', Int(5000, 10)),
  /** Delivery attempts in flight per instance: overall, per webhook, per partner. */
  webhookConcurrency: {
    total: number('WEBHOOK_CONCURRENCY', Int(32, 1)),
    perEndpoint: number('WEBHOOK_CONCURRENCY_PER_ENDPOINT', Int(2, 1)),
    perPartner: number('WEBHOOK_CONCURRENCY_PER_PARTNER', Int(8, 1)),
  },
  /** Delivery attempts in flight per instance to webhooks whose last attempt failed or timed out (one per webhook). */
  webhookSlowConcurrency: number('WEBHOOK_SLOW_CONCURRENCY', Int(8, 1)),
  /** Webhooks a partner may have registered (deleted ones do not count). */
  webhookMaxPerPartner: number('WEBHOOK_MAX_PER_PARTNER', Int(10, 1)),
  /** How long a rotated-out webhook secret still signs deliveries beside the new one. */
  webhookSecretRotationGraceMs: number('WEBHOOK_SECRET_ROTATION_GRACE_MS', Int(DAY)),
  /** A webhook whose every attempt has failed for this long is disabled (as Svix does after 5 days). */
  webhookDisableAfterMs: number('WEBHOOK_DISABLE_AFTER_MS', Int(5 * DAY, MINUTE)),
  /** How often the service looks for webhooks to disable. */
  webhookHealthCheckMs: number('WEBHOOK_HEALTH_CHECK_MS', Int(MINUTE, 1000)),
  /**
   * Deliveries one statement of a recovery (POST /webhooks/{id}/recover) or of enabling a webhook
   * queues or makes due: a recovery reaching back months goes batch by batch, never as one long
   * statement holding locks other deliveries wait for.
   */
  webhookRecoverBatch: number('WEBHOOK_RECOVER_BATCH', Int(1000, 1)),
  fcm: {
    /** Defaults to the service account key's `project_id`. */
    projectId: setting('FCM_PROJECT_ID', Optional()),
    /** A static OAuth token: Google expires it after about an hour, and nothing renews it. */
    accessToken: setting('FCM_ACCESS_TOKEN', Optional()),
    /** The service account key Firebase issues (JSON); access tokens are minted and renewed from it. Wins over FCM_ACCESS_TOKEN. */
    serviceAccountFile: setting('FCM_SERVICE_ACCOUNT_FILE', Optional()),
    endpoint: setting('FCM_ENDPOINT', Text('https://fcm.googleapis.com')),
  },
  bodyLimitBytes: number('BODY_LIMIT_BYTES', Int(64 * 1024, 1024)),
  /**
   * The deadline of receiving a whole request, headers and body, on every listener: a client that
   * trickles its bytes holds a connection (and its buffers) for no longer. At least a second, so
   * seconds mistaken for ms are refused.
   */
  requestTimeoutMs: number('REQUEST_TIMEOUT_MS', Int(30_000, 1000)),
  /** Open connections each listener holds at once; a connection past them is closed as it arrives. */
  maxConnectionsPerListener: number('MAX_CONNECTIONS_PER_LISTENER', Int(10_000, 1)),
  /**
   * After SIGTERM, how long readiness answers 503 while the listeners still serve, before they
   * close: a load balancer polling readiness has stopped sending requests by then. 5 s outside
   * `local`; 0 in `local`, where no load balancer waits on it and Ctrl-C should stop at once.
   */
  shutdownDrainMs: setting('SHUTDOWN_DRAIN_MS', Int(5000), (env, name, appEnv) => int(env, name) ?? (appEnv === 'local' ? 0 : undefined)),
  /** Defaults to the API's own address: http://HOST:PORT/q. */
  shortUrlBase: setting('SHORT_URL_BASE', Type.String()),
  /** The public base URLs (with /api/v1) the OpenAPI document lists as its sandbox and production servers. */
  publicApiUrls: {
    sandbox: setting('PUBLIC_API_URL_SANDBOX', Type.String({ pattern: '^https?://', default: 'https://sandbox.api.example.mn/api/v1' })),
    production: setting('PUBLIC_API_URL_PRODUCTION', Type.String({ pattern: '^https?://', default: 'https://api.example.mn/api/v1' })),
  },
  logLevel: setting('LOG_LEVEL', Text('info')),
  /** `pretty` (pino-pretty's lines) by default only for a local start on a terminal; JSON lines everywhere else. */
  logFormat: setting(
    'LOG_FORMAT',
    Type.Union([Type.Literal('json'), Type.Literal('pretty')]),
    (env, name, appEnv, terminal) => str(env, name) ?? (appEnv === 'local' && terminal ? 'pretty' : 'json'),
  ),
  /** OpenTelemetry span export (docs/operations.md, Tracing); with no endpoint nothing of OpenTelemetry is loaded. */
  otel: {
    endpoint: setting('OTEL_EXPORTER_OTLP_ENDPOINT', Type.Union([Type.String({ pattern: '^https?://' }), Type.Null()], { default: null })),
    serviceName: setting('OTEL_SERVICE_NAME', Type.String({ minLength: 1, default: 'gov-payment-channel' })),
    sampler: setting('OTEL_TRACES_SAMPLER', Type.Union(TRACE_SAMPLERS.map((s) => Type.Literal(s)), { default: 'parentbased_traceidratio' })),
    /** The ratio of traces a ratio sampler keeps (0 to 1). */
    samplerArg: setting('OTEL_TRACES_SAMPLER_ARG', Type.Number({ minimum: 0, maximum: 1, default: 0.1 }), float),
    /** How long finished spans wait to be sent together. */
    scheduleDelayMs: number('OTEL_BSP_SCHEDULE_DELAY', Int(5000, 1)),
  },
  keyRotationGraceMs: number('KEY_ROTATION_GRACE_MS', Int(DAY)),
  /** At most 5 s: a partner's deactivation, keys and rate limits changed on another instance apply within it. */
  authCacheTtlMs: number('AUTH_CACHE_TTL_MS', Type.Integer({ default: 2000, minimum: 0, maximum: 5000 })),
  invoiceCache: { ttlMs: number('INVOICE_CACHE_TTL_MS', Int(30_000)), maxEntries: number('INVOICE_CACHE_MAX_ENTRIES', Int(50_000)) },
  idempotencyTtlMs: number('IDEMPOTENCY_TTL_MS', Int(2 * DAY, DAY)),
  /** Periods of at least a day: partners read the delivery log, and seconds mistaken for ms are refused. */
  retention: {
    sweepMs: number('RETENTION_SWEEP_MS', Int(MINUTE, 1000)),
    batchSize: number('RETENTION_BATCH_SIZE', Int(1000, 1)),
    webhookAttemptMs: number('WEBHOOK_ATTEMPT_RETENTION_MS', Int(30 * DAY, DAY)),
    eventMs: number('EVENT_RETENTION_MS', Int(90 * DAY, DAY)),
  },
  counterRollup: { intervalMs: number('COUNTER_ROLLUP_MS', Int(1000, 100)), batchSize: number('COUNTER_ROLLUP_BATCH_SIZE', Int(5000, 1)) },
  /** How often committed events are given their feed positions between partners' reads. */
  eventPositionMs: number('EVENT_POSITION_MS', Int(1000, 100)),
  /** Daily reconciliation: from `at` (Mongolian time, HH:MM) the previous finance day is reconciled. */
  reconciliation: {
    at: setting('RECONCILE_AT', Type.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$', default: '02:00' })),
    retryMs: number('RECONCILE_RETRY_MS', Int(15 * MINUTE, 1000)),
    leaseMs: number('RECONCILE_LEASE_MS', Int(5 * MINUTE, 1000)),
    waitMs: number('RECONCILE_WAIT_MS', Int(MINUTE)),
    pollMs: number('RECONCILE_POLL_MS', Int(MINUTE, 100)),
  },
} as const satisfies SettingTree;

const isSetting = (node: Setting | SettingTree): node is Setting => typeof (node as Setting).env === 'string' && 'schema' in node;

function schemaOf<T extends SettingTree>(tree: T, options: { default?: object } = {}): SchemaOf<T> {
  const properties = Object.fromEntries(Object.entries(tree).map(([key, node]) => [key, isSetting(node) ? node.schema : schemaOf(node, { default: {} })]));
  return Type.Object(properties, options) as unknown as SchemaOf<T>;
}

/** A setting that is wrong: where in the config it sits (a JSON pointer) and what is wrong, by its variable's name. */
interface Problem {
  at: string;
  message: string;
}

interface Reading {
  env: Env;
  appEnv: AppEnv;
  terminal: boolean;
  /** Each variable whose text is not of its kind (a number, a flag, a list): every one is reported, not the first. */
  unreadable: Problem[];
}

/** What the environment says, setting by setting; a setting it leaves out, or that cannot be read, stays undefined. */
function fromEnv(tree: SettingTree, reading: Reading, path = ''): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(tree).map(([key, node]) => {
      const at = `${path}/${key}`;
      if (!isSetting(node)) return [key, fromEnv(node, reading, at)];
      try {
        return [key, node.read(reading.env, node.env, reading.appEnv, reading.terminal)];
      } catch (err) {
        reading.unreadable.push({ at, message: err instanceof Error ? err.message : String(err) });
        return [key, undefined];
      }
    }),
  );
}

/** The variable each setting is read from, for documentation checks. */
export function settingVariables(tree: SettingTree = SETTINGS): string[] {
  return Object.values(tree).flatMap((node) => (isSetting(node) ? [node.env] : settingVariables(node)));
}

const ConfigSchema = schemaOf(SETTINGS);
export type Config = Static<typeof ConfigSchema>;

/** Drops unset settings so the schema's defaults fill them. */
function withoutUnset(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [k, withoutUnset(v)]),
  );
}

const valueAt = (value: unknown, key: string): unknown => (value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined);

/** What is wrong with one secret outside `local`; never its value, which an error would carry into logs. */
function secretProblem(held: HeldSecret, appEnv: AppEnv): string | undefined {
  if (typeof held.value !== 'string') return `${held.label} is required when APP_ENV=${appEnv}`;
  if (PUBLIC_SECRETS.has(held.value.trim())) return `${held.label} is a publicly documented local default, refused when APP_ENV=${appEnv}`;
  if (held.value.length < SECRET_MIN_LENGTH) return `${held.label} must have at least ${SECRET_MIN_LENGTH} characters when APP_ENV=${appEnv}`;
  return undefined;
}

/** Outside `local`, each offending secret: its place in the config (a JSON pointer) and the problem. */
function secretErrors(tree: SettingTree, config: unknown, appEnv: AppEnv, path = ''): Problem[] {
  if (appEnv === 'local') return [];
  return Object.entries(tree).flatMap(([key, node]) => {
    const value = valueAt(config, key);
    if (!isSetting(node)) return secretErrors(node, value, appEnv, `${path}/${key}`);
    return (node.secrets?.(value, node.env) ?? []).flatMap((held) => {
      const message = secretProblem(held, appEnv);
      return message === undefined ? [] : [{ at: `${path}/${key}${held.at}`, message }];
    });
  });
}

/** The variables of the secret settings, for documentation checks. */
export function secretVariables(tree: SettingTree = SETTINGS): string[] {
  return Object.values(tree).flatMap((node) => (isSetting(node) ? (node.secrets ? [node.env] : []) : secretVariables(node)));
}

/** The words a setting of literals takes (PROCESS_ROLE's), for a complaint that names them rather than each mismatch. */
function choicesOf(schema: TSchema): string[] | null {
  const { anyOf } = schema as { anyOf?: { const?: unknown }[] };
  if (!anyOf?.every((s) => typeof s.const === 'string')) return null;
  return anyOf.map((s) => String(s.const));
}

/** `/0/token` of a list's value as an operator counts it: `item 1 token`. */
const itemPath = (pointer: string) => pointer.split('/').slice(1).map((part) => (/^\d+$/.test(part) ? `item ${Number(part) + 1}` : part)).join(' ');

/**
 * The schema's complaint about one setting's value, by its variable's name; none about a part
 * already reported (an offending secret, at one of `covered`'s pointers), whose own message says
 * it is missing or too short.
 */
function schemaProblem(node: Setting, at: string, value: unknown, covered: (at: string) => boolean): Problem[] {
  if (covered(at) || Value.Check(node.schema, value)) return [];
  if (value === undefined) return [{ at, message: `${node.env} is required` }];
  const choices = choicesOf(node.schema);
  if (choices) return [{ at, message: `${node.env} must be one of ${choices.join(', ')}` }];
  const errors = [...Value.Errors(node.schema, value)].filter((e) => e.keyword !== 'anyOf' && !covered(`${at}${e.instancePath}`));
  const first = errors[0];
  if (!first) return [];
  const where = first.instancePath ? ` ${itemPath(first.instancePath)}` : '';
  return [{ at, message: `${node.env}${where} ${first.message}` }];
}

/** Each setting's problem, in the table's order: its text could not be read, or its value breaks its schema. */
function settingProblems(tree: SettingTree, config: unknown, unreadable: readonly Problem[], covered: (at: string) => boolean, path = ''): Problem[] {
  return Object.entries(tree).flatMap(([key, node]) => {
    const at = `${path}/${key}`;
    const value = valueAt(config, key);
    if (!isSetting(node)) return settingProblems(node, value, unreadable, covered, at);
    const unread = unreadable.filter((p) => p.at === at);
    return unread.length > 0 ? unread : schemaProblem(node, at, value, covered);
  });
}

/** Outside `local`, the ministry systems' addresses: the service has nothing to talk to without them. */
function upstreamProblems(config: Config): Problem[] {
  if (config.appEnv === 'local') return [];
  return Object.entries(SETTINGS.ministryUrls)
    .filter(([source]) => config.ministryUrls[source as keyof Config['ministryUrls']] === null)
    .map(([source, node]) => ({ at: `/ministryUrls/${source}`, message: `${node.env} is required when APP_ENV=${config.appEnv}` }));
}

export interface LoadOptions {
  /** Whether stdout is a terminal (LOG_FORMAT's default); the process's own by default. */
  terminal?: boolean;
  /**
   * Outside `local`, refuse a configuration without every MINISTRY_*_URL: the service's own start
   * (src/bin/api.ts) names them beside every other problem; a tool that never calls a ministry
   * (the migration step) does not need them.
   */
  upstreams?: boolean;
}

/**
 * `tree`'s settings from the environment, validated against `schema` (the tree's); `complete`
 * fills what defaults from other settings and returns its own problems. Throws a ConfigError
 * naming every problem, each by its variable, never a secret's value.
 */
function load<T extends SettingTree>(tree: T, schema: SchemaOf<T>, env: Env, options: LoadOptions, complete: (value: Static<SchemaOf<T>>) => Problem[]): Static<SchemaOf<T>> {
  const stated = str(env, 'APP_ENV') ?? 'local';
  const known = Value.Check(AppEnvSchema, stated);
  // Read as production, the strictest, while APP_ENV itself is wrong: the other problems still show.
  const appEnv: AppEnv = known ? stated : 'production';
  const reading: Reading = { env, appEnv, terminal: options.terminal ?? stdoutIsTerminal(), unreadable: [] };
  const config = Value.Default(schema, withoutUnset({ ...fromEnv(tree, reading), appEnv })) as Static<SchemaOf<T>>;
  const completed = complete(config);
  const secrets = secretErrors(tree, config, appEnv);
  const covered = (at: string) => at === '/appEnv' || secrets.some((s) => at === s.at || at.startsWith(`${s.at}/`));
  const problems = [
    ...(known ? [] : [{ at: '/appEnv', message: `APP_ENV must be one of ${APP_ENVS.join(', ')}, got "${stated}"` }]),
    ...secrets,
    ...settingProblems(tree, config, reading.unreadable, covered),
    ...completed,
  ];
  if (problems.length > 0) throw new ConfigError(problems.map((p) => p.message));
  return config;
}

/** The service's settings from the environment: everything else receives a validated Config. */
export function loadConfig(env: Env = processEnv(), options: LoadOptions = {}): Config {
  return load(SETTINGS, ConfigSchema, env, options, (config) => {
    config.shortUrlBase ??= `http://${config.host}:${config.port}/q`;
    return options.upstreams ? upstreamProblems(config) : [];
  });
}

/** What the migration step needs: the database, nothing of the service's secrets or upstreams. */
const DATABASE_SETTINGS = {
  appEnv: SETTINGS.appEnv,
  databaseUrl: SETTINGS.databaseUrl,
  dataDir: SETTINGS.dataDir,
  dbConnectTimeoutMs: SETTINGS.dbConnectTimeoutMs,
  dbKeepAliveMs: SETTINGS.dbKeepAliveMs,
} as const satisfies SettingTree;

const DatabaseConfigSchema = schemaOf(DATABASE_SETTINGS);
export type DatabaseConfig = Static<typeof DatabaseConfigSchema>;

/** The database's settings alone (`npm run migrate`): a migration job is given no more than it needs. */
export function loadDatabaseConfig(env: Env = processEnv()): DatabaseConfig {
  return load(DATABASE_SETTINGS, DatabaseConfigSchema, env, {}, () => []);
}

/** The sandbox helpers (the sandbox page's simulator approve) exist everywhere but production. */
export function sandboxEnabled(appEnv: AppEnv): boolean {
  return appEnv !== 'production';
}
