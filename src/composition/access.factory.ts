import type { Config } from '../config/config.js';
import { createPartnerService, type PartnerService } from '../services/partner.service.js';
import { createRateLimitersFromConfig, type RateLimiters } from './rate-limit.factory.js';
import type { Repositories } from './repositories.factory.js';
import type { Runtime } from './data.factory.js';

export interface AccessDeps {
  repos: Pick<Repositories, 'partners'>;
  /** Rate-limiter clock in epoch ms; by default Date.now in memory, the Redis server's clock on Redis. */
  rateLimitClock?: () => number;
  rateLimitNamespace?: string;
}

/** Who may call the partner API, and how often: the partners' keys and the rate limiters. */
export interface Access {
  partners: PartnerService;
  rateLimiters: RateLimiters;
}

export async function createAccess(config: Config, runtime: Runtime, deps: AccessDeps): Promise<Access> {
  const rateLimiters = await createRateLimitersFromConfig(config, {
    log: runtime.logger,
    clock: deps.rateLimitClock,
    keyNamespace: deps.rateLimitNamespace,
    counters: { rejections: runtime.metrics.rateLimitRejections, storeErrors: runtime.metrics.rateLimitStoreErrors },
  });
  const partners = createPartnerService({
    partners: deps.repos.partners,
    appEnv: config.appEnv,
    keyRotationGraceMs: config.keyRotationGraceMs,
    authCacheTtlMs: config.authCacheTtlMs,
    // The database's clock: a rotated key's grace ends at the same moment on every instance.
    now: runtime.now,
  });
  return { partners, rateLimiters };
}
