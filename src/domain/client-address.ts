import ipaddr from 'ipaddr.js';

/**
 * The key a per-address limit counts a client under: an IPv4 address as itself (IPv4-mapped IPv6
 * included), an IPv6 address by its /64, the block one subscriber is usually given, so a client
 * cannot escape the limit by cycling through its own addresses.
 */
export function clientAddressKey(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const prefix = ipaddr.IPv6.networkAddressFromCIDR(`${parsed.toString()}/64`);
  return `${prefix.toString()}/64`;
}
