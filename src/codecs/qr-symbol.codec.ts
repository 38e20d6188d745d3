/**
 * A QR symbol at error correction level M (ISO/IEC 18004), each module given under all eight
 * masks at once. The `qrcode` library builds the same symbol, but it was the largest part of a
 * payment's QR image (about 170 µs of 500 on a 2-core machine): it builds a bit buffer, a
 * generator polynomial per block and the function patterns again for every symbol, and its
 * matrix then had to be re-masked eight ways. Here what depends only on the version
 * (function patterns, placement order, mask bits, generator polynomial) is built once per
 * version, and a symbol is its bit stream, its error correction and one pass over its modules.
 * A test holds it to the library's output, module for module.
 */

export type QrDataSegment = { mode: 'numeric' | 'alphanumeric'; data: string } | { mode: 'byte'; data: Uint8Array };

export interface QrSymbol {
  version: number;
  size: number;
  /** Row-major; bit p of each byte is the module's colour (1 = dark) under mask p, format information included. */
  masked: Uint8Array;
}

// ISO/IEC 18004 tables 1 and 9, level M, versions 1 to 40.
const TOTAL_CODEWORDS = [26, 44, 70, 100, 134, 172, 196, 242, 292, 346, 404, 466, 532, 581, 655, 733, 815, 901, 991, 1085, 1156, 1258, 1364, 1474, 1588, 1706, 1828, 1921, 2051, 2185, 2323, 2465, 2611, 2761, 2876, 3034, 3196, 3362, 3532, 3706];
const EC_CODEWORDS = [10, 16, 26, 36, 48, 64, 72, 88, 110, 130, 150, 176, 198, 216, 240, 280, 308, 338, 364, 416, 442, 476, 504, 560, 588, 644, 700, 728, 784, 812, 868, 924, 980, 1036, 1064, 1120, 1204, 1260, 1316, 1372];
const EC_BLOCKS = [1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16, 17, 17, 18, 20, 21, 23, 25, 26, 28, 29, 31, 33, 35, 37, 38, 40, 43, 45, 47, 49];

const MODE_BITS = { numeric: 0b0001, alphanumeric: 0b0010, byte: 0b0100 } as const;
/** Character count indicator lengths for versions 1-9, 10-26 and 27-40 (table 3). */
const COUNT_BITS = { numeric: [10, 12, 14], alphanumeric: [9, 11, 13], byte: [8, 16, 16] } as const;
const ALPHANUMERIC = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:';
const ALPHANUMERIC_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < ALPHANUMERIC.length; i++) ALPHANUMERIC_VALUE[ALPHANUMERIC.charCodeAt(i)] = i;

const dataCodewords = (version: number): number => (TOTAL_CODEWORDS[version - 1] ?? 0) - (EC_CODEWORDS[version - 1] ?? 0);
const countBits = (mode: QrDataSegment['mode'], version: number): number => COUNT_BITS[mode][version < 10 ? 0 : version < 27 ? 1 : 2];

function payloadBits(segment: QrDataSegment): number {
  const n = segment.data.length;
  if (segment.mode === 'numeric') return 10 * Math.floor(n / 3) + (n % 3 === 0 ? 0 : (n % 3) * 3 + 1);
  if (segment.mode === 'alphanumeric') return 11 * Math.floor(n / 2) + 6 * (n % 2);
  return 8 * n;
}

/** The smallest version whose data capacity holds the segments with their headers. */
function versionFor(segments: readonly QrDataSegment[]): number {
  for (let version = 1; version <= 40; version++) {
    let bits = 0;
    for (const segment of segments) bits += 4 + countBits(segment.mode, version) + payloadBits(segment);
    if (bits <= dataCodewords(version) * 8) return version;
  }
  throw new RangeError('the text is too long for a QR code at error correction level M');
}

/** Writes bits most significant first into whole bytes. */
class BitWriter {
  readonly bytes: Uint8Array;
  bits = 0;

  constructor(capacity: number) {
    this.bytes = new Uint8Array(capacity);
  }

  put(value: number, length: number): void {
    for (let i = length - 1; i >= 0; i--, this.bits++) {
      if ((value >>> i) & 1) this.bytes[this.bits >>> 3] = (this.bytes[this.bits >>> 3] ?? 0) | (0x80 >>> (this.bits & 7));
    }
  }
}

function checkedAlphanumeric(data: string, i: number): number {
  const value = ALPHANUMERIC_VALUE[data.charCodeAt(i)] ?? -1;
  if (value < 0) throw new RangeError(`not an alphanumeric-mode character: ${JSON.stringify(data[i])}`);
  return value;
}

function writeSegment(out: BitWriter, segment: QrDataSegment, version: number): void {
  out.put(MODE_BITS[segment.mode], 4);
  out.put(segment.data.length, countBits(segment.mode, version));
  if (segment.mode === 'byte') {
    for (const byte of segment.data) out.put(byte, 8);
    return;
  }
  const { data } = segment;
  if (segment.mode === 'numeric') {
    if (!/^[0-9]*$/.test(data)) throw new RangeError('a numeric segment holds digits only');
    for (let i = 0; i < data.length; i += 3) {
      const group = data.slice(i, i + 3);
      out.put(Number(group), group.length * 3 + 1);
    }
    return;
  }
  for (let i = 0; i + 1 < data.length; i += 2) out.put(checkedAlphanumeric(data, i) * 45 + checkedAlphanumeric(data, i + 1), 11);
  if (data.length % 2 === 1) out.put(checkedAlphanumeric(data, data.length - 1), 6);
}

/** The data codewords: the segments, the terminator, then the pad codewords 0xEC and 0x11 in turn. */
function dataStream(segments: readonly QrDataSegment[], version: number): Uint8Array {
  const capacity = dataCodewords(version);
  const out = new BitWriter(capacity);
  for (const segment of segments) writeSegment(out, segment, version);
  // The terminator (4 zero bits, fewer where the capacity ends first) and the padding to a byte
  // boundary are zeros the buffer holds already.
  const terminated = out.bits + Math.min(4, capacity * 8 - out.bits);
  for (let i = Math.ceil(terminated / 8), pad = 0xec; i < capacity; i++, pad ^= 0xec ^ 0x11) out.bytes[i] = pad;
  return out.bytes;
}

// GF(256) with the primitive polynomial x^8 + x^4 + x^3 + x^2 + 1.
const EXP = new Uint8Array(512);
const LOG = new Uint8Array(256);
for (let i = 0, x = 1; i < 255; i++) {
  EXP[i] = x;
  LOG[x] = i;
  x <<= 1;
  if (x & 0x100) x ^= 0x11d;
}
for (let i = 255; i < 512; i++) EXP[i] = EXP[i - 255] ?? 0;

/** The generator polynomial of degree `n`, leading 1 left out, as logarithms of its coefficients. */
function generatorLogs(n: number): Uint8Array {
  let poly = [1];
  for (let i = 0; i < n; i++) {
    const next = new Array<number>(poly.length + 1).fill(0);
    for (let j = 0; j < poly.length; j++) {
      const c = poly[j] ?? 0;
      next[j] = (next[j] ?? 0) ^ c;
      if (c !== 0) next[j + 1] = (next[j + 1] ?? 0) ^ (EXP[(LOG[c] ?? 0) + i] ?? 0);
    }
    poly = next;
  }
  // Zero has no logarithm; no generator of a QR code has a zero coefficient.
  if (poly.includes(0)) throw new Error(`generator polynomial of degree ${n} has a zero coefficient`);
  return Uint8Array.from(poly.slice(1), (c) => LOG[c] ?? 0);
}

/**
 * Reed-Solomon error correction codewords of `data`: the remainder of its division by the
 * generator, by long division in place (each step cancels the leading term).
 */
function errorCorrection(data: Uint8Array, generator: Uint8Array): Uint8Array {
  const n = generator.length;
  const work = new Uint8Array(data.length + n);
  work.set(data);
  for (let i = 0; i < data.length; i++) {
    const lead = work[i] ?? 0;
    if (lead === 0) continue;
    const logLead = LOG[lead] ?? 0;
    for (let j = 0; j < n; j++) work[i + 1 + j] = (work[i + 1 + j] ?? 0) ^ (EXP[(generator[j] ?? 0) + logLead] ?? 0);
  }
  return work.subarray(data.length);
}

interface VersionLayout {
  size: number;
  /** Module indices of the data bits, in placement order (figure 13 of the standard). */
  order: Uint16Array;
  /** Each module under every mask when all data bits are 0: function patterns, format information and mask bits. */
  template: Uint8Array;
  blocks: number;
  ecPerBlock: number;
  generator: Uint8Array;
}

function maskBit(mask: number, i: number, j: number): boolean {
  switch (mask) {
    case 0: return (i + j) % 2 === 0;
    case 1: return i % 2 === 0;
    case 2: return j % 3 === 0;
    case 3: return (i + j) % 3 === 0;
    case 4: return (Math.floor(i / 2) + Math.floor(j / 3)) % 2 === 0;
    case 5: return ((i * j) % 2) + ((i * j) % 3) === 0;
    case 6: return (((i * j) % 2) + ((i * j) % 3)) % 2 === 0;
    default: return (((i * j) % 3) + ((i + j) % 2)) % 2 === 0;
  }
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

/** The 18 version information bits: the version and its BCH (18, 6) remainder. */
function versionInfoBits(version: number): number {
  let remainder = version << 12;
  for (let bit = 17; bit >= 12; bit--) {
    if (remainder & (1 << bit)) remainder ^= 0x1f25 << (bit - 12);
  }
  return (version << 12) | remainder;
}

/** Alignment pattern centres along one axis (annex E). */
function alignmentCoordinates(version: number, size: number): number[] {
  if (version === 1) return [];
  const count = Math.floor(version / 7) + 2;
  const step = size === 145 ? 26 : Math.ceil((size - 13) / (2 * count - 2)) * 2;
  const coords = [size - 7];
  for (let i = 1; i < count - 1; i++) coords.push((coords[i - 1] ?? 0) - step);
  coords.push(6);
  return coords.reverse();
}

function buildLayout(version: number): VersionLayout {
  const size = version * 4 + 17;
  const reserved = new Uint8Array(size * size);
  const template = new Uint8Array(size * size);
  const fixed = (row: number, col: number, dark: boolean): void => {
    reserved[row * size + col] = 1;
    template[row * size + col] = dark ? 0xff : 0;
  };

  for (const [top, left] of [[0, 0], [size - 7, 0], [0, size - 7]] as const) {
    for (let r = -1; r <= 7; r++) {
      for (let c = -1; c <= 7; c++) {
        const row = top + r;
        const col = left + c;
        if (row < 0 || row >= size || col < 0 || col >= size) continue;
        const ring = (r >= 0 && r <= 6 && (c === 0 || c === 6)) || (c >= 0 && c <= 6 && (r === 0 || r === 6));
        fixed(row, col, ring || (r >= 2 && r <= 4 && c >= 2 && c <= 4));
      }
    }
  }
  for (let i = 8; i < size - 8; i++) {
    fixed(i, 6, i % 2 === 0);
    fixed(6, i, i % 2 === 0);
  }
  const centres = alignmentCoordinates(version, size);
  const last = centres.length - 1;
  centres.forEach((row, i) =>
    centres.forEach((col, j) => {
      // The three corners the finder patterns hold.
      if ((i === 0 && j === 0) || (i === 0 && j === last) || (i === last && j === 0)) return;
      for (let r = -2; r <= 2; r++) {
        for (let c = -2; c <= 2; c++) fixed(row + r, col + c, r === -2 || r === 2 || c === -2 || c === 2 || (r === 0 && c === 0));
      }
    }),
  );
  if (version >= 7) {
    const bits = versionInfoBits(version);
    for (let i = 0; i < 18; i++) {
      const row = Math.floor(i / 3);
      const col = (i % 3) + size - 11;
      fixed(row, col, ((bits >> i) & 1) === 1);
      fixed(col, row, ((bits >> i) & 1) === 1);
    }
  }
  // Format information, in both copies, as each mask writes it (bit p of a module for mask p).
  for (let i = 0; i < 15; i++) {
    const vRow = i < 6 ? i : i < 8 ? i + 1 : size - 15 + i;
    const hCol = i < 8 ? size - i - 1 : i < 9 ? 15 - i : 14 - i;
    let lanes = 0;
    for (let mask = 0; mask < 8; mask++) lanes |= ((formatInfoBits(mask) >> i) & 1) << mask;
    for (const at of [vRow * size + 8, 8 * size + hCol]) {
      reserved[at] = 1;
      template[at] = lanes;
    }
  }
  fixed(size - 8, 8, true);

  const order: number[] = [];
  for (let col = size - 1, upward = true; col > 0; col -= 2, upward = !upward) {
    if (col === 6) col--;
    for (let step = 0; step < size; step++) {
      const row = upward ? size - 1 - step : step;
      for (let c = 0; c < 2; c++) {
        const at = row * size + col - c;
        if (reserved[at]) continue;
        order.push(at);
        let lanes = 0;
        for (let mask = 0; mask < 8; mask++) lanes |= (maskBit(mask, row, col - c) ? 1 : 0) << mask;
        template[at] = lanes;
      }
    }
  }

  const blocks = EC_BLOCKS[version - 1] ?? 1;
  const ecPerBlock = (EC_CODEWORDS[version - 1] ?? 0) / blocks;
  return { size, order: Uint16Array.from(order), template, blocks, ecPerBlock, generator: generatorLogs(ecPerBlock) };
}

const layouts = new Map<number, VersionLayout>();

function layoutOf(version: number): VersionLayout {
  let layout = layouts.get(version);
  if (!layout) {
    layout = buildLayout(version);
    layouts.set(version, layout);
  }
  return layout;
}

/** Data and error correction codewords, split into blocks and interleaved (section 7.6). */
function codewords(data: Uint8Array, version: number, layout: VersionLayout): Uint8Array {
  const total = TOTAL_CODEWORDS[version - 1] ?? 0;
  const { blocks, ecPerBlock, generator } = layout;
  const longBlocks = total % blocks;
  const shortData = Math.floor(total / blocks) - ecPerBlock;
  const out = new Uint8Array(total);
  const dataOf: Uint8Array[] = [];
  const eccOf: Uint8Array[] = [];
  for (let b = 0, start = 0; b < blocks; b++) {
    const length = shortData + (b >= blocks - longBlocks ? 1 : 0);
    const block = data.subarray(start, start + length);
    dataOf.push(block);
    eccOf.push(errorCorrection(block, generator));
    start += length;
  }
  let at = 0;
  for (let i = 0; i <= shortData; i++) {
    for (const block of dataOf) if (i < block.length) out[at++] = block[i] ?? 0;
  }
  for (let i = 0; i < ecPerBlock; i++) {
    for (const ecc of eccOf) out[at++] = ecc[i] ?? 0;
  }
  return out;
}

export function encodeQrSymbol(segments: readonly QrDataSegment[]): QrSymbol {
  if (segments.length === 0) throw new RangeError('a QR code needs some data');
  const version = versionFor(segments);
  const layout = layoutOf(version);
  const stream = codewords(dataStream(segments, version), version, layout);
  const masked = layout.template.slice();
  const { order } = layout;
  // Every codeword's bits, most significant first, flip their modules; the remainder bits after them stay 0.
  for (let i = 0, bit = 0; i < stream.length; i++, bit += 8) {
    const byte = stream[i] ?? 0;
    if (byte === 0) continue;
    for (let k = 0; k < 8; k++) {
      if ((byte << k) & 0x80) {
        const at = order[bit + k] ?? 0;
        masked[at] = (masked[at] ?? 0) ^ 0xff;
      }
    }
  }
  return { version, size: layout.size, masked };
}
