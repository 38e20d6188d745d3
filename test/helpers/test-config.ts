import { loadConfig, type Config } from '../../src/config/config.js';

/**
 * Config for tests: local defaults, in-memory PGlite, and the real PostgreSQL / Redis only when
 * the environment names them (that is how CI runs the same suites on both paths).
 */
export function testConfig(overrides: Partial<Config> = {}, env: Record<string, string | undefined> = process.env): Config {
  const base = loadConfig({
    DATA_DIR: 'memory://',
    LOG_LEVEL: env.TEST_LOG_LEVEL ?? 'silent',
    DATABASE_URL: env.DATABASE_URL,
    REDIS_URL: env.REDIS_URL,
    // High enough that suites bursting requests are never limited; rate-limit tests pass their own.
    RATE_LIMIT_PER_SECOND: '1000000',
    RATE_LIMIT_PER_MINUTE: '1000000',
    RATE_LIMIT_PER_HOUR: '1000000',
    AUTH_FAILURES_PER_MINUTE: '1000000',
    SHORT_LINK_RATE_LIMIT_PER_MINUTE: '1000000',
  });
  // Suites that inject faults on purpose would otherwise trip the breaker for later tests.
  return { ...base, circuitBreaker: { failureThreshold: 1000, openMs: 1000 }, ...overrides };
}
