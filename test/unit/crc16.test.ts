import { describe, expect, it } from 'vitest';
import { crc16CcittFalse } from '../../src/codecs/crc16.codec.js';

/** Bit-by-bit reference, deliberately sharing nothing with the table-driven implementation. */
function referenceCrc(text: string): string {
  let crc = 0xffff;
  for (const byte of new TextEncoder().encode(text)) {
    for (let bit = 7; bit >= 0; bit--) {
      const inputBit = (byte >> bit) & 1;
      const topBit = (crc >> 15) & 1;
      crc = (crc << 1) & 0xffff;
      if ((inputBit ^ topBit) === 1) crc ^= 0x1021;
    }
  }
  return crc.toString(16).toUpperCase().padStart(4, '0');
}

/** Small seeded PRNG (mulberry32) so a failure reproduces. */
function prng(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcxyz .-_/абвгдеёжзийклмнөоүуфхцчшщъыьэюяӨҮ€😀';

function randomText(next: () => number): string {
  const chars = Array.from(ALPHABET);
  const length = Math.floor(next() * 300);
  let text = '';
  for (let i = 0; i < length; i++) text += chars[Math.floor(next() * chars.length)];
  return text;
}

describe('crc16CcittFalse', () => {
  it('gives the CRC-16/CCITT-FALSE check value 29B1 for "123456789"', () => {
    expect(crc16CcittFalse('123456789')).toBe('29B1');
    expect(referenceCrc('123456789')).toBe('29B1');
  });

  it('returns the init value for empty input (no final xor)', () => {
    expect(crc16CcittFalse('')).toBe('FFFF');
  });

  it('matches an independent bitwise implementation over random UTF-8 strings', () => {
    const next = prng(20250101);
    for (let i = 0; i < 500; i++) {
      const text = randomText(next);
      const crc = crc16CcittFalse(text);
      expect(crc).toMatch(/^[0-9A-F]{4}$/);
      expect(crc, JSON.stringify(text)).toBe(referenceCrc(text));
    }
  });

  it('reproduces the CRC of published EMVCo payloads (promptpay-qr reference vectors)', () => {
    const published = [
      '00020101021229370016A000000677010111011300660000000005802TH530376454044.226304E469',
      '00020101021129370016A000000677010111011300668123456785802TH530376463045D82',
    ];
    for (const payload of published) {
      expect(crc16CcittFalse(payload.slice(0, -4))).toBe(payload.slice(-4));
    }
  });

  it('hashes the UTF-8 bytes, so Cyrillic differs from a same-length Latin string', () => {
    expect(crc16CcittFalse('яам')).toBe(referenceCrc('яам'));
    expect(crc16CcittFalse('яам')).not.toBe(crc16CcittFalse('yam'));
  });
});
