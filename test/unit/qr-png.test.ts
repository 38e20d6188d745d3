import { createRequire } from 'node:module';
import { PNG } from 'pngjs';
import QRCode from 'qrcode';
import { describe, expect, it } from 'vitest';
import { buildQrMatrix, encodeQrPng, qrPngBase64 } from '../../src/codecs/qr-png.codec.js';
import { encodeQrSymbol, formatInfoBits } from '../../src/codecs/qr-symbol.codec.js';
import { qrSegments } from '../../src/codecs/qr-segments.codec.js';
import { decodeQrImage } from '../helpers/qr-decode.js';

// jsqr is a UMD bundle typed with an ES default export: under NodeNext the default import is
// typed as the module object, while require() returns the decoder function itself.
const jsQR = createRequire(import.meta.url)('jsqr') as typeof import('jsqr').default;

const SHORT = '00020101021227340016A0000009990000010110GOV-MOF-01520493115303496540712000.55802MN5912Sangiin yaam6011ULAANBAATAR62300115MOF-2025-0001230507PAY00016304602E';
const LONG_CYRILLIC =
  '00020101021226430010mn.gov.pay0125MN-GOV-ETAX-0123456789012' +
  '5204931153034965409123456.785802MN5925Mongol Ulsyn Sangiin yaam6011ULAANBAATAR' +
  '62560123ETAX-2025-000012345678905250OMXODJQRL1QHCQ7AR0V9XH63' +
  '64350002MN0125Монгол Улсын Сангийн яамн6304EE2C';

function decodePng(png: Buffer): { width: number; height: number; text: string | undefined } {
  const image = PNG.sync.read(png);
  const rgba = new Uint8ClampedArray(image.data.buffer, image.data.byteOffset, image.data.length);
  const result = jsQR(rgba, image.width, image.height);
  return { width: image.width, height: image.height, text: result?.data };
}

/** Bitwise CRC-32 (IEEE), independent of node:zlib's. */
function crc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

interface Chunk {
  type: string;
  data: Buffer;
  crc: number;
  computedCrc: number;
}

function chunks(png: Buffer): Chunk[] {
  const list: Chunk[] = [];
  for (let at = 8; at < png.length; ) {
    const length = png.readUInt32BE(at);
    const typeAndData = png.subarray(at + 4, at + 8 + length);
    list.push({
      type: typeAndData.subarray(0, 4).toString('latin1'),
      data: typeAndData.subarray(4),
      crc: png.readUInt32BE(at + 8 + length),
      computedCrc: crc32(typeAndData),
    });
    at += 12 + length;
  }
  return list;
}

describe('encodeQrPng', () => {
  it.each([
    ['short ASCII payload', SHORT],
    ['long payload with Cyrillic', LONG_CYRILLIC],
  ])('round-trips a %s through a QR decoder exactly', (_name, text) => {
    expect(decodePng(encodeQrPng(text)).text).toBe(text);
  });

  it('writes a 1-bit grayscale PNG with IHDR, IDAT, IEND and valid chunk CRCs', () => {
    const png = encodeQrPng(SHORT);
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    const list = chunks(png);
    expect(list.map((c) => c.type)).toEqual(['IHDR', 'IDAT', 'IEND']);
    for (const chunk of list) expect(chunk.crc).toBe(chunk.computedCrc);

    const ihdr = list[0]?.data ?? Buffer.alloc(0);
    const size = buildQrMatrix(SHORT).size;
    const side = (size + 2 * 4) * 4;
    expect(ihdr).toHaveLength(13);
    expect(ihdr.readUInt32BE(0)).toBe(side);
    expect(ihdr.readUInt32BE(4)).toBe(side);
    expect([...ihdr.subarray(8)]).toEqual([1, 0, 0, 0, 0]); // depth 1, gray, deflate, filter 0, no interlace
  });

  // 4 pixels a module after an even quiet zone is drawn two modules to a byte; the others run by run.
  it.each([
    [3, 2],
    [4, 4],
    [4, 1],
    [8, 1],
  ])('draws each module as scale x scale pixels inside a white quiet zone (scale %i, margin %i)', (scale, margin) => {
    const { size, modules } = buildQrMatrix(SHORT);
    const image = PNG.sync.read(encodeQrPng(SHORT, { scale, margin }));
    expect(image.width).toBe((size + 2 * margin) * scale);
    const pixel = (x: number, y: number): number => image.data[(y * image.width + x) * 4] ?? -1;
    expect(pixel(0, 0)).toBe(255);
    expect(pixel(image.width - 1, image.height - 1)).toBe(255);
    for (let row = 0; row < size; row++) {
      for (let col = 0; col < size; col++) {
        const expected = modules[row * size + col] ? 0 : 255;
        const x = (margin + col) * scale;
        const y = (margin + row) * scale;
        expect(pixel(x, y)).toBe(expected);
        expect(pixel(x + scale - 1, y + scale - 1)).toBe(expected);
      }
    }
  });

  it('rejects unusable scale and margin values', () => {
    expect(() => encodeQrPng(SHORT, { scale: 0 })).toThrow(RangeError);
    expect(() => encodeQrPng(SHORT, { scale: 1.5 })).toThrow(RangeError);
    expect(() => encodeQrPng(SHORT, { margin: -1 })).toThrow(RangeError);
  });

  it('qrPngBase64 is the base64 of the same PNG', () => {
    expect(Buffer.from(qrPngBase64(SHORT), 'base64')).toEqual(encodeQrPng(SHORT));
  });
});

describe('qrSegments', () => {
  const samples = [SHORT, LONG_CYRILLIC, 'A', 'abc', '1234567890', `${SHORT}Я`, 'Сангийн яам 5912 ULAANBAATAR-2025-000123', 'x'.repeat(700)];
  for (let i = 1; i <= 40; i++) samples.push(`${SHORT.slice(0, i * 3)}Я${i}`);

  it('round-trips every text through the QR code', () => {
    for (const text of samples) expect(decodeQrImage(qrPngBase64(text))).toBe(text);
  });

  it('needs at most one QR version more than the library\'s optimal segmentation, and none on EMVCo payloads', () => {
    for (const text of samples) {
      const optimal = QRCode.create(text, { errorCorrectionLevel: 'M' }).version;
      expect(QRCode.create(qrSegments(text), { errorCorrectionLevel: 'M' }).version).toBeLessThanOrEqual(optimal + 1);
    }
    expect(QRCode.create(qrSegments(SHORT), { errorCorrectionLevel: 'M' }).version).toBe(QRCode.create(SHORT, { errorCorrectionLevel: 'M' }).version);
  });

  it('uses numeric and alphanumeric modes where they pay', () => {
    expect(qrSegments('12345678901234567890').map((s) => s.mode)).toEqual(['numeric']);
    expect(qrSegments('ABC-1234567890123456-XYZ').map((s) => s.mode)).toEqual(['alphanumeric', 'numeric', 'alphanumeric']);
    expect(qrSegments('abc ULAANBAATAR-2025 def').map((s) => s.mode)).toEqual(['byte', 'alphanumeric', 'byte']);
    expect(qrSegments('abc XY def').map((s) => s.mode)).toEqual(['byte']);
  });
});

describe('buildQrMatrix', () => {
  it('is module-for-module what qrcode produces at level M for the same segments, mask choice included', () => {
    const texts = [SHORT, LONG_CYRILLIC, 'A', '1234567890', 'x'.repeat(700)];
    for (let i = 1; i <= 40; i++) texts.push(`${SHORT.slice(0, i * 3)}Я${i}`);
    const masks = new Set<number>();
    for (const text of texts) {
      const expected = QRCode.create(qrSegments(text), { errorCorrectionLevel: 'M' });
      const actual = buildQrMatrix(text);
      expect(actual.size).toBe(expected.modules.size);
      expect(actual.maskPattern).toBe(expected.maskPattern);
      expect(Buffer.from(actual.modules).equals(Buffer.from(expected.modules.data))).toBe(true);
      masks.add(actual.maskPattern);
    }
    // The comparison only means something if several masks actually won.
    expect(masks.size).toBeGreaterThan(3);
  });

  it('matches qrcode at every version from 1 to 40, in each mode and mixed', () => {
    // A seeded generator: the same texts on every run.
    let seed = 0x2f6b3c1d;
    const random = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    const pools = ['0123456789', '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:', 'abcdefghijklmnopqrstuvwxyzЯБВГД'];
    const textOf = (kind: number, length: number): string => {
      let text = '';
      while (text.length < length) {
        const pool = pools[kind === 3 ? random(3) : kind] as string;
        const run = kind === 3 ? random(24) + 1 : 1;
        for (let i = 0; i < run; i++) text += pool[random(pool.length)] as string;
      }
      return text.slice(0, length);
    };
    for (let kind = 0; kind < 4; kind++) {
      const versions = new Set<number>();
      // The first text of each version, found by lengths growing 1% a step, is compared.
      for (let length = 1; ; length = Math.ceil(length * 1.01) + 1) {
        const text = textOf(kind, length);
        const segments = qrSegments(text);
        let version: number;
        try {
          version = encodeQrSymbol(segments).version;
        } catch (err) {
          expect(err).toBeInstanceOf(RangeError);
          expect(() => QRCode.create(segments, { errorCorrectionLevel: 'M' })).toThrow();
          break;
        }
        if (versions.has(version)) continue;
        versions.add(version);
        const actual = buildQrMatrix(text);
        // The library's own mask choice scores eight whole symbols, up to 177 x 177 modules each, so
        // above version 20 (where the test above has checked the choice) it is given ours.
        const expected = QRCode.create(segments, { errorCorrectionLevel: 'M', ...(version > 20 ? { maskPattern: actual.maskPattern as QRCode.QRCodeMaskPattern } : {}) });
        expect(actual.size).toBe(expected.modules.size);
        expect(actual.maskPattern).toBe(expected.maskPattern);
        expect(Buffer.from(actual.modules).equals(Buffer.from(expected.modules.data))).toBe(true);
      }
      expect(versions.size).toBe(40);
    }
  });

  it('encodes format information as ISO/IEC 18004 table C.1 lists for level M', () => {
    const table = [0x5412, 0x5125, 0x5e7c, 0x5b4b, 0x45f9, 0x40ce, 0x4f97, 0x4aa0];
    expect(table.map((_, mask) => formatInfoBits(mask))).toEqual(table);
  });
});
