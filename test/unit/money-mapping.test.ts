import { describe, expect, it } from 'vitest';
import { isoFromEpochMs, isoFromIso, isoFromMongolianLocal } from '../../src/adapters/ministry/date.mapping.js';
import {
  amountFromMongo,
  amountFromNumber,
  amountToFixed2,
  amountToMongo,
  amountToNumber,
  canonicalAmount,
  AmountError,
  requestedAmount,
  storableAmount,
} from '../../src/domain/money.js';
import { storableKey } from '../../src/adapters/ministry/key.mapping.js';
import { WireValueError } from '../../src/adapters/ministry/wire-value.error.js';

describe('amount mapping', () => {
  it.each([
    ['12000.00', '12000'],
    ['12000.50', '12000.5'],
    ['12000.25', '12000.25'],
    ['0012000', '12000'],
    ['0.10', '0.1'],
    ['0', '0'],
  ])('canonicalAmount(%s) = %s', (input, expected) => {
    expect(canonicalAmount(input)).toBe(expected);
  });

  it.each(['12000.125', '-5', '1e5', '', '12,000', ' 1'])('refuses %j', (input) => {
    expect(() => canonicalAmount(input)).toThrow(AmountError);
  });

  it('maps JSON numbers without float arithmetic', () => {
    expect(amountFromNumber(12000)).toBe('12000');
    expect(amountFromNumber(12000.5)).toBe('12000.5');
    expect(amountFromNumber(0.3)).toBe('0.3');
    expect(() => amountFromNumber(1e21)).toThrow(AmountError);
    expect(() => amountFromNumber(Number.NaN)).toThrow(AmountError);
  });

  it('takes an upstream amount only while numeric(16,2) holds it: below 10^14', () => {
    expect(amountFromNumber(99999999999999.98)).toBe('99999999999999.98');
    expect(storableAmount('99999999999999.99')).toBe('99999999999999.99');
    expect(storableAmount('000000000000000012.50')).toBe('12.5');
    expect(() => amountFromNumber(100000000000000)).toThrow(AmountError);
    expect(() => storableAmount('100000000000000')).toThrow(AmountError);
    expect(() => storableAmount('1'.repeat(10_000))).toThrow(/10000 whole digits/);
    expect(() => amountFromNumber(-1)).toThrow(AmountError);
    expect(() => amountFromNumber(12.345)).toThrow(AmountError);
  });

  it('maps integer möngö', () => {
    expect(amountFromMongo(1200050)).toBe('12000.5');
    expect(amountFromMongo(1200000)).toBe('12000');
    expect(amountFromMongo(1200025)).toBe('12000.25');
    expect(amountFromMongo(5)).toBe('0.05');
    expect(amountFromMongo(0)).toBe('0');
    expect(() => amountFromMongo(12.5)).toThrow(AmountError);
    expect(() => amountFromMongo(-100)).toThrow(AmountError);
  });

  it('encodes amounts for each wire format', () => {
    expect(amountToMongo('12000.5')).toBe(1200050);
    expect(amountToMongo('0.07')).toBe(7);
    expect(amountToFixed2('12000')).toBe('12000.00');
    expect(amountToFixed2('12000.5')).toBe('12000.50');
    expect(JSON.stringify({ amount: amountToNumber('12000.25') })).toBe('{"amount":12000.25}');
    expect(amountToMongo('123456789012.99')).toBe(12345678901299);
  });

  it('takes a partner amount only when positive with at most 2 decimals and 14 whole digits', () => {
    expect(requestedAmount(12000.5)).toBe('12000.5');
    expect(requestedAmount(0.1 + 0.2)).toBeNull();
    expect(requestedAmount(0)).toBeNull();
    expect(requestedAmount(-1)).toBeNull();
    expect(requestedAmount(1e15)).toBeNull();
    expect(requestedAmount(Number.POSITIVE_INFINITY)).toBeNull();
  });
});

describe('date mapping', () => {
  it('normalises ISO times with offsets to UTC', () => {
    expect(isoFromIso('2025-11-01T09:30:00+08:00')).toBe('2025-11-01T01:30:00.000Z');
    expect(isoFromIso('2025-11-01T01:30:00Z')).toBe('2025-11-01T01:30:00.000Z');
    expect(() => isoFromIso('2025-11-01')).toThrow(WireValueError);
    expect(() => isoFromIso('yesterday')).toThrow(WireValueError);
  });

  it('reads Mongolian local time as UTC+8, across midnight', () => {
    expect(isoFromMongolianLocal('2025-11-01 09:30:00')).toBe('2025-11-01T01:30:00.000Z');
    expect(isoFromMongolianLocal('2025-11-01 03:00:00')).toBe('2025-10-31T19:00:00.000Z');
    expect(() => isoFromMongolianLocal('2025-11-01T09:30:00')).toThrow(WireValueError);
  });

  it('reads epoch milliseconds', () => {
    expect(isoFromEpochMs(Date.UTC(2025, 10, 1, 1, 30))).toBe('2025-11-01T01:30:00.000Z');
    expect(() => isoFromEpochMs(1.5)).toThrow(WireValueError);
  });

  it('takes only times the database keeps as given: years 100 to 9999, in UTC', () => {
    expect(isoFromIso('0100-01-01T00:00:00Z')).toBe('0100-01-01T00:00:00.000Z');
    expect(isoFromIso('9999-12-31T23:59:59.999Z')).toBe('9999-12-31T23:59:59.999Z');
    expect(isoFromMongolianLocal('9999-12-31 23:59:59')).toBe('9999-12-31T15:59:59.000Z');
    expect(isoFromEpochMs(0)).toBe('1970-01-01T00:00:00.000Z');
    expect(() => isoFromIso('0000-06-01T00:00:00Z')).toThrow(WireValueError);
    expect(() => isoFromIso('0099-12-31T23:59:59Z')).toThrow(WireValueError);
    expect(() => isoFromIso('9999-12-31T23:59:59-01:00')).toThrow(WireValueError);
    expect(() => isoFromMongolianLocal('0100-01-01 07:59:59')).toThrow(WireValueError);
    expect(() => isoFromEpochMs(8.64e15)).toThrow(WireValueError);
    expect(() => isoFromEpochMs(-8.64e15)).toThrow(WireValueError);
  });
});

describe('key mapping', () => {
  it('takes a key only while one index entry holds it: 1 KiB of UTF-8', () => {
    expect(storableKey('Ё'.repeat(512))).toBe('Ё'.repeat(512));
    expect(() => storableKey('Ё'.repeat(513))).toThrow(WireValueError);
    expect(() => storableKey('x'.repeat(1025))).toThrow(/1025 bytes/);
  });
});
