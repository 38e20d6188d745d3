import ipaddr from 'ipaddr.js';
import type { AppEnv } from './vocabulary.js';

export interface TargetPolicy {
  /** Plain http is accepted only in local development. */
  allowHttp: boolean;
  /** Loopback, private, link-local and reserved addresses are accepted only when this is set. */
  allowPrivate: boolean;
}

/** The rule for partners' webhook URLs in a deployment: plain http only in local development. */
export function webhookTargetPolicy(appEnv: AppEnv, allowPrivate: boolean): TargetPolicy {
  return { allowHttp: appEnv === 'local', allowPrivate };
}

/** ::/96, the deprecated IPv4-compatible block: some stacks still route ::7f00:1 to 127.0.0.1. */
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

/** The IPv4 address an IPv4-compatible IPv6 address carries in its last 32 bits, else the address itself. */
function unwrapIpv4(address: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  if (address.kind() !== 'ipv6' || !address.match(IPV4_COMPATIBLE)) return address;
  return ipaddr.fromByteArray(address.toByteArray().slice(12));
}

/**
 * True only for globally routable unicast addresses. IPv4-mapped (::ffff:127.0.0.1) and
 * IPv4-compatible (::127.0.0.1, written ::7f00:1 once a URL is parsed) IPv6 are unwrapped first
 * and judged as the IPv4 address they carry, in whatever form they were written; NAT64, 6to4 and
 * Teredo ranges can embed private IPv4 targets and are refused as a whole.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  return unwrapIpv4(ipaddr.process(address)).range() === 'unicast';
}

/** The host of a URL as an IP literal (IPv6 brackets removed), or null for a DNS name. */
export function ipLiteral(hostname: string): string | null {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) ? bare : null;
}

function isLocalName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/** Checks that need no DNS: scheme, credentials, and a literal or well-known local host. */
export function urlViolations(raw: string, policy: TargetPolicy): string[] {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return ['url must be an absolute URL'];
  }
  const schemes = policy.allowHttp ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol)) return [policy.allowHttp ? 'url must use http or https' : 'url must use https'];
  if (url.username || url.password) return ['url must not contain credentials'];
  if (policy.allowPrivate) return [];
  const literal = ipLiteral(url.hostname);
  if ((literal !== null && !isPublicAddress(literal)) || isLocalName(url.hostname)) {
    return ['url must not point to a loopback, private, link-local or reserved address'];
  }
  return [];
}
