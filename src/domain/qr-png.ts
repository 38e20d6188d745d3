import QRCode from 'qrcode';
import { crc32, deflateSync } from 'node:zlib';
import { qrSegments } from './qr-segments.js';

/**
 * QR code as a 1-bit grayscale PNG. `qrcode` builds the module matrix; everything after that is
 * ours because the library is the hot-path cost: its mask choice tries 8 masks through
 * per-module method calls (~0.7 ms) and its PNG path (~5 ms) draws RGBA pixel by pixel.
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
 * included, at a fraction of the cost: the library builds it once with mask 0, then we score the
 * 8 masks with the library's own penalty rules on flat typed arrays.
 */
export function buildQrMatrix(text: string): QrMatrix {
  const symbol = QRCode.create(qrSegments(text), { errorCorrectionLevel: 'M', maskPattern: 0 });
  const { size, data, reservedBit } = symbol.modules;
  const remasks = remaskTables(size, reservedBit);
  const candidate = new Uint8Array(size * size);
  let bestMask = 0;
  let bestPenalty = Infinity;
  for (let mask = 0; mask < 8; mask++) {
    const dark = remask(data, remasks[mask], candidate);
    const score =
      linePenalty(candidate, size) +
      blockPenalty(candidate, size) +
      balancePenalty(dark, candidate.length);
    if (score < bestPenalty) {
      bestPenalty = score;
      bestMask = mask;
    }
  }
  remask(data, remasks[bestMask], candidate);
  return { size, modules: candidate, maskPattern: bestMask };
}

/**
 * Per symbol size, what to XOR onto the mask-0 symbol to get mask p instead, format bits
 * included. Function patterns depend only on the version (hence the size), and the modulo-heavy
 * mask formulas would otherwise dominate remasking, so this is computed once per size.
 */
const remaskCache = new Map<number, Uint8Array[]>();

function remaskTables(size: number, reserved: Uint8Array): Uint8Array[] {
  const cached = remaskCache.get(size);
  if (cached) return cached;
  const tables: Uint8Array[] = [];
  for (let mask = 0; mask < 8; mask++) {
    const table = new Uint8Array(size * size);
    for (let row = 0, i = 0; row < size; row++) {
      for (let col = 0; col < size; col++, i++) {
        if (!reserved[i]) table[i] = maskBit(0, row, col) ^ maskBit(mask, row, col);
      }
    }
    writeFormatInfo(table, size, formatInfoBits(0) ^ formatInfoBits(mask));
    tables.push(table);
  }
  remaskCache.set(size, tables);
  return tables;
}

/** Writes into `out` the symbol masked with `table`'s mask instead of mask 0; returns dark count. */
function remask(masked0: Uint8Array, table: Uint8Array | undefined, out: Uint8Array): number {
  if (table === undefined) throw new Error('no remask table');
  let dark = 0;
  for (let i = 0; i < out.length; i++) {
    const module = (masked0[i] ?? 0) ^ (table[i] ?? 0);
    out[i] = module;
    dark += module;
  }
  return dark;
}

function maskBit(mask: number, i: number, j: number): number {
  let on: boolean;
  switch (mask) {
    case 0: on = (i + j) % 2 === 0; break;
    case 1: on = i % 2 === 0; break;
    case 2: on = j % 3 === 0; break;
    case 3: on = (i + j) % 3 === 0; break;
    case 4: on = (Math.floor(i / 2) + Math.floor(j / 3)) % 2 === 0; break;
    case 5: on = ((i * j) % 2) + ((i * j) % 3) === 0; break;
    case 6: on = (((i * j) % 2) + ((i * j) % 3)) % 2 === 0; break;
    default: on = (((i * j) % 3) + ((i + j) % 2)) % 2 === 0; break;
  }
  return on ? 1 : 0;
}

/** Error correction level M has the 2-bit indicator 00, so the format data is just the mask. */
export function formatInfoBits(mask: number): number {
  const generator = 0x537;
  let remainder = mask << 10;
  for (let bit = 14; bit >= 10; bit--) {
    if (remainder & (1 << bit)) remainder ^= generator << (bit - 10);
  }
  return ((mask << 10) | remainder) ^ 0x5412;
}

/** The 15 format bits at their two places (ISO/IEC 18004 figure 25, `qrcode`'s setupFormatInfo). */
function writeFormatInfo(modules: Uint8Array, size: number, bits: number): void {
  for (let i = 0; i < 15; i++) {
    const bit = (bits >> i) & 1;
    const vRow = i < 6 ? i : i < 8 ? i + 1 : size - 15 + i;
    const hCol = i < 8 ? size - i - 1 : i < 9 ? 15 - i : 14 - i;
    modules[vRow * size + 8] = bit;
    modules[8 * size + hCol] = bit;
  }
}

/*
 * The penalty rules score exactly as `qrcode` does (N1 runs of 5+, N2 2x2 blocks, N3 1:1:3:1:1
 * finder look-alikes, N4 dark balance), so we pick the mask the library would have picked.
 * Module colours are close to random, so the run and block counts are written without
 * data-dependent branches: mispredictions cost more than the arithmetic.
 */

/**
 * N1 and N3 over every row and column. A run of L >= 5 scores L - 2, which equals its number
 * of all-equal 5-module windows (L - 4) plus 2 for the window that starts it.
 */
function linePenalty(m: Uint8Array, size: number): number {
  let points = 0;
  for (let line = 0; line < size; line++) {
    const rowStart = line * size;
    let rowPrev = m[rowStart] ?? 0;
    let colPrev = m[line] ?? 0;
    let rowBits = rowPrev, colBits = colPrev;
    let rowEqual = 0, colEqual = 0, rowWindow = 0, colWindow = 0;
    for (let k = 1; k < size; k++) {
      const r = m[rowStart + k] ?? 0;
      const c = m[k * size + line] ?? 0;
      rowEqual = ((rowEqual << 1) | (1 ^ r ^ rowPrev)) & 15;
      colEqual = ((colEqual << 1) | (1 ^ c ^ colPrev)) & 15;
      const rw = (rowEqual + 1) >> 4;
      const cw = (colEqual + 1) >> 4;
      points += rw + cw + ((rw & ~rowWindow) << 1) + ((cw & ~colWindow) << 1);
      rowWindow = rw;
      colWindow = cw;
      rowPrev = r;
      colPrev = c;
      rowBits = ((rowBits << 1) & 0x7ff) | r;
      colBits = ((colBits << 1) & 0x7ff) | c;
      if (k >= 10) {
        if (rowBits === 0x5d0 || rowBits === 0x05d) points += 40;
        if (colBits === 0x5d0 || colBits === 0x05d) points += 40;
      }
    }
  }
  return points;
}

/** N2: a 2x2 block is uniform when its module sum is 0 or 4, i.e. `sum & 3` is 0. */
function blockPenalty(m: Uint8Array, size: number): number {
  let blocks = 0;
  for (let row = 0; row < size - 1; row++) {
    const top = row * size;
    const bottom = top + size;
    let left = (m[top] ?? 0) + (m[bottom] ?? 0);
    for (let col = 1; col < size; col++) {
      const right = (m[top + col] ?? 0) + (m[bottom + col] ?? 0);
      blocks += 1 - ((((left + right) & 3) + 3) >> 2);
      left = right;
    }
  }
  return blocks * 3;
}

function balancePenalty(dark: number, total: number): number {
  return Math.abs(Math.ceil((dark * 100) / total / 5) - 10) * 10;
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
  // Level 1: half the CPU of the default level for ~170 more bytes (821 vs 653 at version 9).
  const idat = deflateSync(rasterize(matrix, scale, margin, width), { level: 1 });
  return Buffer.concat([PNG_SIGNATURE, pngChunk('IHDR', header), pngChunk('IDAT', idat), IEND]);
}

/** Filtered scanlines: each module row is drawn once and copied `scale` times. */
function rasterize(matrix: QrMatrix, scale: number, margin: number, width: number): Buffer {
  const stride = 1 + Math.ceil(width / 8);
  const raw = Buffer.alloc(stride * width, 0xff);
  for (let y = 0; y < width; y++) raw[y * stride] = 0;
  const { size, modules } = matrix;
  for (let row = 0; row < size; row++) {
    const first = (margin + row) * scale * stride;
    drawModuleRow(raw, first + 1, modules, row * size, size, margin * scale, scale);
    for (let copy = 1; copy < scale; copy++) {
      raw.copy(raw, first + copy * stride, first, first + stride);
    }
  }
  return raw;
}

function drawModuleRow(
  raw: Buffer,
  lineStart: number,
  modules: Uint8Array,
  rowStart: number,
  size: number,
  xOffset: number,
  scale: number,
): void {
  for (let col = 0; col < size; col++) {
    if (!modules[rowStart + col]) continue;
    const x0 = xOffset + col * scale;
    for (let x = x0; x < x0 + scale; x++) {
      const at = lineStart + (x >> 3);
      raw[at] = (raw[at] ?? 0) & ~(0x80 >> (x & 7));
    }
  }
}

function pngChunk(type: string, data: Buffer): Buffer {
  const chunk = Buffer.alloc(12 + data.length);
  chunk.writeUInt32BE(data.length, 0);
  chunk.write(type, 4, 'latin1');
  data.copy(chunk, 8);
  chunk.writeUInt32BE(crc32(chunk.subarray(4, 8 + data.length)), 8 + data.length);
  return chunk;
}
