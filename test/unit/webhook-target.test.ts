import { describe, expect, it } from 'vitest';
import { ipLiteral, isPublicAddress, urlViolations } from '../../src/domain/webhook-target.js';

describe('isPublicAddress', () => {
  it.each([
    '127.0.0.1', '127.8.9.10', '10.0.0.1', '172.16.5.4', '192.168.0.1', '169.254.169.254', '100.64.0.1', '0.0.0.0',
    '255.255.255.255', '224.0.0.1', '192.0.2.1', '198.51.100.7', '203.0.113.9', '240.0.0.1',
    '::', '::1', 'fe80::1', 'fc00::1', 'fd12:3456::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '::ffff:169.254.169.254',
    '64:ff9b::a00:1', '2002:a00:1::', '2001:db8::1', 'not-an-ip',
  ])('refuses %s', (ip) => {
    expect(isPublicAddress(ip)).toBe(false);
  });

  it.each(['93.184.216.34', '8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('accepts %s', (ip) => {
    expect(isPublicAddress(ip)).toBe(true);
  });
});

describe('IPv4 carried in IPv6', () => {
  const embedded = ['127.0.0.1', '10.0.0.1', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0'];
  const hex = (v4: string) => {
    const [a = 0, b = 0, c = 0, d = 0] = v4.split('.').map(Number);
    return `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  };
  const forms = (v4: string) => [
    `::${v4}`,
    `::${hex(v4)}`,
    `0:0:0:0:0:0:${hex(v4)}`,
    `0000:0000:0000:0000:0000:0000:${v4}`,
    `::ffff:${v4}`,
    `::FFFF:${hex(v4)}`,
    `0:0:0:0:0:ffff:${hex(v4)}`,
    `0:0:0:0:0:ffff:${v4}`,
    `64:ff9b::${v4}`,
    `64:ff9b::${hex(v4)}`,
  ];

  it.each(embedded.flatMap(forms))('refuses %s as an address and as a URL host', (ip) => {
    expect(isPublicAddress(ip)).toBe(false);
    expect(urlViolations(`https://[${ip}]:4200/x`, { allowHttp: false, allowPrivate: false })).toHaveLength(1);
  });

  it('judges a public IPv4 by what it is, however it is carried (NAT64 aside)', () => {
    expect(isPublicAddress('::8.8.8.8')).toBe(true);
    expect(isPublicAddress('::ffff:808:808')).toBe(true);
    expect(isPublicAddress('64:ff9b::8.8.8.8')).toBe(false);
  });

  it('leaves private IPv6 literals to local mode', () => {
    expect(urlViolations('https://[::127.0.0.1]:4200/x', { allowHttp: true, allowPrivate: true })).toEqual([]);
  });
});

describe('urlViolations', () => {
  const strict = { allowHttp: false, allowPrivate: false };
  it('accepts a public https url and reads IPv6 literals', () => {
    expect(urlViolations('https://hooks.example.com/x?y=1', strict)).toEqual([]);
    expect(urlViolations('https://[2606:4700:4700::1111]/x', strict)).toEqual([]);
    expect(ipLiteral('[::1]')).toBe('::1');
    expect(ipLiteral('example.com')).toBeNull();
  });

  it('needs https outside local and allows http and loopback in local', () => {
    expect(urlViolations('http://hooks.example.com/x', strict)).toEqual(['url must use https']);
    expect(urlViolations('http://127.0.0.1:9/x', { allowHttp: true, allowPrivate: true })).toEqual([]);
  });

  it('refuses private literals, local names and credentials', () => {
    for (const url of ['https://127.0.0.1/', 'https://[::ffff:7f00:1]/', 'https://LOCALHOST./', 'https://2130706433/']) {
      expect(urlViolations(url, strict)).toHaveLength(1);
    }
    expect(urlViolations('https://a:b@hooks.example.com/', strict)).toEqual(['url must not contain credentials']);
    expect(urlViolations('mailto:x@example.com', strict)).toEqual(['url must use https']);
  });
});
