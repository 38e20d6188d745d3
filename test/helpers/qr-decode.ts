import { createRequire } from 'node:module';
import { PNG } from 'pngjs';

// jsqr's typings describe a CommonJS default export that NodeNext cannot call as an ESM default.
const jsQR = createRequire(import.meta.url)('jsqr') as typeof import('jsqr').default;

/** Decodes a base64 PNG QR image back to its text with libraries independent of the encoder. */
export function decodeQrImage(base64: string): string | null {
  const png = PNG.sync.read(Buffer.from(base64, 'base64'));
  const rgba = new Uint8ClampedArray(png.data.buffer, png.data.byteOffset, png.data.length);
  const result = jsQR(rgba, png.width, png.height);
  return result ? new TextDecoder('utf-8').decode(new Uint8Array(result.binaryData)) : null;
}

/** Bitwise CRC-16/CCITT-FALSE, written independently of src/codecs/crc16.codec.ts. */
export function referenceCrc16(text: string): string {
  let crc = 0xffff;
  for (const byte of Buffer.from(text, 'utf8')) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc.toString(16).toUpperCase().padStart(4, '0');
}

/** Top-level EMVCo TLVs, lengths counted in characters. */
export function topLevelTags(payload: string): Map<string, string> {
  const tags = new Map<string, string>();
  const chars = [...payload];
  let i = 0;
  while (i < chars.length) {
    const tag = chars.slice(i, i + 2).join('');
    const len = Number(chars.slice(i + 2, i + 4).join(''));
    tags.set(tag, chars.slice(i + 4, i + 4 + len).join(''));
    i += 4 + len;
  }
  return tags;
}
