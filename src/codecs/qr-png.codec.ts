import { crc32 } from 'node:zlib';
import { qrSegments } from './qr-segments.codec.js';
import { deflateRepeatedRows, type RepeatedRow } from './qr-image-deflate.codec.js';
import { encodeQrSymbol } from './qr-symbol.codec.js';

/**
 * QR code as a 1-bit grayscale PNG, drawn without the `qrcode` library because it is on every
 * payment's path: its symbol took about 170 µs, its mask choice tries 8 masks through per-module
 * method calls (~0.7 ms) and its PNG path (~5 ms) draws RGBA pixel by pixel. Tests hold the
 * matrix to the library's, module for module.
 */

export interface QrPngOptions {
  /** Pixels per module. */
  scale?: number;
  /** Quiet zone in modules; ISO/IEC 18004 asks for 4. */
  margin?: number;
}

export interface QrMatrix {
  size: number;
  /** Row-major, 1 = dark module. */
  modules: Uint8Array;
  maskPattern: number;
}

const DEFAULT_SCALE = 4;
const DEFAULT_MARGIN = 4;

export function qrPngBase64(text: string, opts?: QrPngOptions): string {
  return encodeQrPng(text, opts).toString('base64');
}

export function encodeQrPng(text: string, opts: QrPngOptions = {}): Buffer {
  const scale = checkedInteger('scale', opts.scale ?? DEFAULT_SCALE, 1, 64);
  const margin = checkedInteger('margin', opts.margin ?? DEFAULT_MARGIN, 0, 64);
  return encodeMatrixPng(buildQrMatrix(text), scale, margin);
}

function checkedInteger(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${name} must be an integer from ${min} to ${max}`);
  }
  return value;
}

// ---- matrix and mask selection ----------------------------------------------------------

/**
 * Same matrix as `QRCode.create(qrSegments(text), { errorCorrectionLevel: 'M' })`, mask choice
 * included: the symbol is built with each module under all 8 masks at once, one bit per mask in
 * each module's byte, and the masks are scored at once with the library's own penalty rules.
 */
export function buildQrMatrix(text: string): QrMatrix {
  const { size, masked } = encodeQrSymbol(qrSegments(text));
  const bestMask = lowestPenaltyMask(masked, size);
  const modules = new Uint8Array(size * size);
  for (let i = 0; i < modules.length; i++) modules[i] = ((masked[i] ?? 0) >> bestMask) & 1;
  return { size, modules, maskPattern: bestMask };
}

/*
 * The penalty rules score exactly as `qrcode` does (N1 runs of 5+, N2 2x2 blocks, N3 1:1:3:1:1
 * finder look-alikes, N4 dark balance), so we pick the mask the library would have picked. Each
 * module is a byte holding its colour under all 8 masks, so one bitwise expression tests a rule
 * for every mask; a rule that holds adds its points to `points[byte]`, and each mask's total is
 * read back from the bytes that have its bit set.
 */
function lowestPenaltyMask(masked: Uint8Array, size: number): number {
  const points = new Uint32Array(256);
  const dark = new Uint32Array(256);
  const column = new Uint8Array(size);
  for (let n = 0; n < size; n++) {
    linePoints(masked.subarray(n * size, n * size + size), points);
    for (let k = 0; k < size; k++) column[k] = masked[k * size + n] ?? 0;
    linePoints(column, points);
  }
  blockPoints(masked, size, points);
  for (let i = 0; i < masked.length; i++) {
    const v = masked[i] ?? 0;
    dark[v] = (dark[v] ?? 0) + 1;
  }
  let best = 0;
  let bestPenalty = Infinity;
  for (let mask = 0; mask < 8; mask++) {
    let penalty = 0;
    let darkCount = 0;
    for (let v = 1; v < 256; v++) {
      if ((v >> mask) & 1) {
        penalty += points[v] ?? 0;
        darkCount += dark[v] ?? 0;
      }
    }
    penalty += Math.abs(Math.ceil((darkCount * 100) / masked.length / 5) - 10) * 10;
    if (penalty < bestPenalty) {
      bestPenalty = penalty;
      best = mask;
    }
  }
  return best;
}

/**
 * N1 and N3 along one row or column. A run of L >= 5 scores L - 2: one point per all-equal
 * 5-module window (L - 4) plus 2 for the window that starts it. N3 looks for 1011101 with four
 * light modules after it (0x5d0 over 11 modules) or before it (0x05d); the 1011101 core is rare,
 * so the light sides are read only where it occurs.
 */
function linePoints(m: Uint8Array, points: Uint32Array): void {
  const size = m.length;
  let m1 = m[0] ?? 0, m2 = 0, m3 = 0, m4 = 0, m5 = 0, m6 = 0;
  let e1 = 0, e2 = 0, e3 = 0, window = 0;
  for (let k = 1; k < size; k++) {
    const cur = m[k] ?? 0;
    const eq = ~(cur ^ m1) & 0xff;
    const w = eq & e1 & e2 & e3;
    const starts = w & ~window;
    if (w) points[w] = (points[w] ?? 0) + 1;
    if (starts) points[starts] = (points[starts] ?? 0) + 2;
    const core = k >= 6 ? m6 & ~m5 & m4 & m3 & m2 & ~m1 & cur : 0;
    if (core) finderPoints(m, k, core, points);
    e3 = e2;
    e2 = e1;
    e1 = eq;
    window = w;
    m6 = m5;
    m5 = m4;
    m4 = m3;
    m3 = m2;
    m2 = m1;
    m1 = cur;
  }
}

/** N3 for a 1011101 core ending at `end`, on the masks in `core`. */
function finderPoints(m: Uint8Array, end: number, core: number, points: Uint32Array): void {
  if (end >= 10) {
    const before = core & ~((m[end - 10] ?? 0) | (m[end - 9] ?? 0) | (m[end - 8] ?? 0) | (m[end - 7] ?? 0)) & 0xff;
    if (before) points[before] = (points[before] ?? 0) + 40;
  }
  if (end + 4 < m.length) {
    const after = core & ~((m[end + 1] ?? 0) | (m[end + 2] ?? 0) | (m[end + 3] ?? 0) | (m[end + 4] ?? 0)) & 0xff;
    if (after) points[after] = (points[after] ?? 0) + 40;
  }
}

/** N2: 3 points per 2x2 block of one colour. */
function blockPoints(m: Uint8Array, size: number, points: Uint32Array): void {
  for (let row = 0; row < size - 1; row++) {
    const top = row * size;
    const bottom = top + size;
    for (let col = 1; col < size; col++) {
      const a = m[top + col - 1] ?? 0;
      const uniform = ~((a ^ (m[top + col] ?? 0)) | (a ^ (m[bottom + col - 1] ?? 0)) | (a ^ (m[bottom + col] ?? 0))) & 0xff;
      if (uniform) points[uniform] = (points[uniform] ?? 0) + 3;
    }
  }
}

// ---- PNG --------------------------------------------------------------------------------

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const IEND = pngChunk('IEND', Buffer.alloc(0));

/** 1-bit grayscale (0 = black), filter type 0 on every row. */
export function encodeMatrixPng(matrix: QrMatrix, scale: number, margin: number): Buffer {
  const width = (matrix.size + 2 * margin) * scale;
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(width, 4);
  header[8] = 1;
  header[9] = 0;
  // A filter byte, then the row's pixels at 8 to a byte.
  const stride = 1 + Math.ceil(width / 8);
  const idat = deflateRepeatedRows(scanlines(matrix, scale, margin, stride), stride);
  return Buffer.concat([PNG_SIGNATURE, pngChunk('IHDR', header), pngChunk('IDAT', idat), IEND]);
}

/** Each module row's scanline once, drawn `scale` times, inside the white quiet zone's lines. */
function scanlines(matrix: QrMatrix, scale: number, margin: number, stride: number): RepeatedRow[] {
  // Filter byte 0, then white: the pixels the modules leave, and the padding bits of the last byte.
  const blank = () => {
    const line = new Uint8Array(stride).fill(0xff);
    line[0] = 0;
    return line;
  };
  const quiet: RepeatedRow[] = margin > 0 ? [{ line: blank(), times: margin * scale }] : [];
  const { size, modules } = matrix;
  const rows: RepeatedRow[] = [...quiet];
  for (let row = 0; row < size; row++) {
    const line = blank();
    drawModuleRow(line, 1, modules, row * size, size, margin * scale, scale);
    rows.push({ line, times: scale });
  }
  rows.push(...quiet);
  return rows;
}

/** A byte of two 4-pixel modules, by (left << 1) | right: 0 is black. */
const MODULE_PAIR_BYTES = [0xff, 0xf0, 0x0f, 0x00];

/** Each run of dark modules in the row as one range of dark pixels. */
function drawModuleRow(raw: Uint8Array, lineStart: number, modules: Uint8Array, rowStart: number, size: number, xOffset: number, scale: number): void {
  if (scale === 4 && xOffset % 8 === 0) {
    // The default drawing: two modules to a byte, byte-aligned after the quiet zone.
    for (let col = 0, at = lineStart + xOffset / 8; col < size; col += 2, at++) {
      const right = col + 1 < size ? (modules[rowStart + col + 1] ?? 0) : 0;
      raw[at] = MODULE_PAIR_BYTES[((modules[rowStart + col] ?? 0) << 1) | right] ?? 0xff;
    }
    return;
  }
  for (let col = 0; col < size; ) {
    if (!modules[rowStart + col]) {
      col++;
      continue;
    }
    const from = col;
    while (col < size && modules[rowStart + col]) col++;
    darken(raw, lineStart, xOffset + from * scale, xOffset + col * scale);
  }
}

/** Clears pixels x0 to x1 (exclusive) of a 1-bit scanline: 0 is black. */
function darken(raw: Uint8Array, lineStart: number, x0: number, x1: number): void {
  const firstByte = lineStart + (x0 >> 3);
  const lastByte = lineStart + ((x1 - 1) >> 3);
  const head = 0xff >> (x0 & 7);
  const tail = (0xff << (7 - ((x1 - 1) & 7))) & 0xff;
  if (firstByte === lastByte) {
    raw[firstByte] = (raw[firstByte] ?? 0) & ~(head & tail);
    return;
  }
  raw[firstByte] = (raw[firstByte] ?? 0) & ~head;
  for (let at = firstByte + 1; at < lastByte; at++) raw[at] = 0;
  raw[lastByte] = (raw[lastByte] ?? 0) & ~tail;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const chunk = Buffer.alloc(12 + data.length);
  chunk.writeUInt32BE(data.length, 0);
  chunk.write(type, 4, 'latin1');
  data.copy(chunk, 8);
  chunk.writeUInt32BE(crc32(chunk.subarray(4, 8 + data.length)), 8 + data.length);
  return chunk;
}
