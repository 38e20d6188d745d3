import { deflateSync, inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { deflateRepeatedRows, type RepeatedRow } from '../../src/codecs/qr-image-deflate.codec.js';
import { buildQrMatrix, encodeQrPng } from '../../src/codecs/qr-png.codec.js';

/** A seeded generator: the same cases on every run. */
function seeded(seed: number): (n: number) => number {
  let state = seed >>> 0;
  return (n) => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return (state >>> 8) % n;
  };
}

function expanded(rows: readonly RepeatedRow[]): Buffer {
  return Buffer.concat(rows.flatMap((row) => Array.from({ length: row.times }, () => Buffer.from(row.line))));
}

function idatOf(png: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (let at = 8; at < png.length; ) {
    const length = png.readUInt32BE(at);
    if (png.toString('latin1', at + 4, at + 8) === 'IDAT') parts.push(png.subarray(at + 8, at + 8 + length));
    at += 12 + length;
  }
  return Buffer.concat(parts);
}

describe('deflateRepeatedRows', () => {
  it('inflates, with zlib checking its checksum, to exactly the lines it stands for', () => {
    const random = seeded(0x51ced);
    for (let round = 0; round < 200; round++) {
      const stride = 3 + random(round % 10 === 0 ? 2000 : 60);
      const rows: RepeatedRow[] = [];
      for (let r = random(12); r >= 0; r--) {
        const kind = random(4);
        // Any bytes, the four a default QR row is made of, or the line before again.
        const previous = rows[rows.length - 1];
        const line =
          kind === 0 && previous
            ? previous.line
            : Uint8Array.from({ length: stride }, () => (kind === 1 ? random(256) : ([0x00, 0x0f, 0xf0, 0xff][random(4)] as number)));
        rows.push({ line, times: random(5) === 0 ? 1 + random(400) : 1 + random(8) });
      }
      expect(inflateSync(deflateRepeatedRows(rows, stride)).equals(expanded(rows))).toBe(true);
    }
  });

  it('splits a repeat of any length into matches of 3 to 258 bytes', () => {
    for (let times = 1; times <= 120; times++) {
      for (const stride of [3, 4, 5, 86, 129, 256, 257, 258, 259, 260]) {
        const line = Uint8Array.from({ length: stride }, (_, i) => (i * 37) & 0xff);
        expect(inflateSync(deflateRepeatedRows([{ line, times }], stride)).equals(expanded([{ line, times }]))).toBe(true);
      }
    }
  });

  it('refuses lines it cannot match to the one above', () => {
    expect(() => deflateRepeatedRows([{ line: new Uint8Array(2), times: 2 }], 2)).toThrow(RangeError);
    expect(() => deflateRepeatedRows([{ line: new Uint8Array(40_000), times: 2 }], 40_000)).toThrow(RangeError);
    expect(() => deflateRepeatedRows([{ line: new Uint8Array(4), times: 2 }], 5)).toThrow(RangeError);
  });

  it('keeps a default QR image about as small as zlib at level 1 made it', () => {
    for (let i = 0; i < 20; i++) {
      const text = `00020101021226530012mn.gov.pay0133MN-GOV-MOF-0152049399530349654${i}1000.005802MN5913Ministry Fin.6011Ulaanbaatar6225${'R'.repeat(21)}${i}6304ABCD`;
      const idat = idatOf(encodeQrPng(text));
      const zlib = deflateSync(inflateSync(idat), { level: 1 });
      expect(idat.length).toBeLessThanOrEqual(zlib.length * 1.1);
      expect(buildQrMatrix(text).size).toBeGreaterThan(21);
    }
  });
});
