import { lookup as dnsLookup, promises as dns } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { ipLiteral, isPublicAddress, urlViolations, type TargetPolicy } from '../domain/webhook-target.js';

export const PRIVATE_TARGET = 'url must not point to a loopback, private, link-local or reserved address';

export type HostResolver = (hostname: string) => Promise<string[]>;

const resolveAll: HostResolver = async (hostname) => (await dns.lookup(hostname, { all: true })).map((a) => a.address);

class BlockedTargetError extends Error {
  readonly code = 'EBLOCKEDTARGET';
  constructor(hostname: string) {
    super(`${hostname} resolves only to loopback, private, link-local or reserved addresses`);
  }
}

/**
 * net.connect lookup that drops non-public addresses after resolution. The socket connects to the
 * address checked here, so a DNS answer that changes between check and connect (rebinding)
 * cannot reach an internal host.
 */
export const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '');
    const allowed = addresses.filter((a) => isPublicAddress(a.address));
    const first = allowed[0];
    if (!first) return callback(new BlockedTargetError(hostname), '');
    if (options.all) return callback(null, allowed);
    callback(null, first.address, first.family);
  });
};

/** Registration-time check: static URL rules, then every address the name resolves to today. */
export function createTargetGuard(policy: TargetPolicy, resolve: HostResolver = resolveAll) {
  return {
    policy,
    async violations(url: string): Promise<string[]> {
      const found = urlViolations(url, policy);
      if (found.length > 0 || policy.allowPrivate) return found;
      const hostname = new URL(url).hostname;
      if (ipLiteral(hostname) !== null) return [];
      let addresses: string[];
      try {
        addresses = await resolve(hostname);
      } catch (err) {
        // A name that does not exist is a typo; a transient DNS failure is left to delivery time.
        return (err as { code?: string }).code === 'ENOTFOUND' ? ['url host does not resolve'] : [];
      }
      return addresses.every(isPublicAddress) ? [] : [PRIVATE_TARGET];
    },
  };
}

export type TargetGuard = ReturnType<typeof createTargetGuard>;
