import ipaddr from 'ipaddr.js';

/** `a.b.c.d` or `::ffff:a.b.c.d` with each part 0-255 and no leading zeros. */
const DOTTED_V4 = /^(?:::ffff:)?((?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))$/i;

/**
 * The key a per-address limit counts a client under: an IPv4 address as itself (IPv4-mapped IPv6
 * included), an IPv6 address by its /64, the block one subscriber is usually given, so a client
 * cannot escape the limit by cycling through its own addresses.
 */
export function clientAddressKey(address: string): string {
  // Every request computes this; a plain or IPv4-mapped IPv4 address needs no parse.
  const v4 = DOTTED_V4.exec(address);
  if (v4?.[1]) return v4[1];
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const prefix = ipaddr.IPv6.networkAddressFromCIDR(`${parsed.toString()}/64`);
  return `${prefix.toString()}/64`;
}
