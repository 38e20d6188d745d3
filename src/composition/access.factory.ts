import type { Logger as PinoLogger } from 'pino';
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import { createPartnerRepository } from '../db/repositories/partner.repository.js';
import { createPartnerService, type PartnerService } from '../services/partner.service.js';
import { createRateLimitersFromConfig, type RateLimiters } from '../adapters/rate-limit/rate-limit.factory.js';
import type { Metrics } from '../adapters/metrics.js';
import type { Clock } from '../domain/clock.port.js';

export interface AccessDeps {
  db: Db;
  logger: PinoLogger;
  metrics: Metrics;
  /** The database's clock: a rotated key's grace ends at the same moment on every instance. */
  now: Clock;
  /** Rate-limiter clock in epoch ms; by default Date.now in memory, the Redis server's clock on Redis. */
  rateLimitClock?: () => number;
  rateLimitNamespace?: string;
}

/** Who may call the partner API, and how often: the partners' keys and the rate limiters. */
export interface Access {
  partners: PartnerService;
  rateLimiters: RateLimiters;
}

function createPartners(config: Config, deps: Pick<AccessDeps, 'db' | 'now'>): PartnerService {
  return createPartnerService({
    partners: createPartnerRepository(deps.db, deps.now),
    appEnv: config.appEnv,
    keyRotationGraceMs: config.keyRotationGraceMs,
    authCacheTtlMs: config.authCacheTtlMs,
    now: deps.now,
  });
}

export async function createAccess(config: Config, deps: AccessDeps): Promise<Access> {
  const rateLimiters = await createRateLimitersFromConfig(config, {
    log: deps.logger,
    clock: deps.rateLimitClock,
    keyNamespace: deps.rateLimitNamespace,
    counters: { rejections: deps.metrics.rateLimitRejections, storeErrors: deps.metrics.rateLimitStoreErrors },
  });
  return { partners: createPartners(config, deps), rateLimiters };
}
