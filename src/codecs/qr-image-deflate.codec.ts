/**
 * The zlib stream (RFC 1950) of a QR image's PNG scanlines, written straight from its distinct
 * rows: each scanline is sent once and its repeats as back-references to the row above. The
 * image needs no search for repeats, since it is drawn a module row `scale` times over, and
 * zlib's deflateSync spent most of its time on each small image setting up its state (a 256 KB
 * window and hash tables, and a stream object).
 *
 * One deflate block with a Huffman code of our own, the same for every image (RFC 1951 3.2.7): at
 * 4 pixels a module, the default, a scanline holds only the bytes 00, 0F, F0 and FF, which take
 * 2 or 3 bits each; every other literal, the end of block and the match lengths take 10 or 11.
 * Any bytes round-trip; those four are what make it small (about as small as zlib at level 1).
 */

const MOD_ADLER = 65_521;
const MAX_MATCH = 258;
const MAX_DISTANCE = 32_768;

const LENGTH_BASES = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
const LENGTH_EXTRA = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
const DISTANCE_BASES = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577];
const DISTANCE_EXTRA = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];
/** The order code length code lengths are sent in (RFC 1951 3.2.7). */
const CODE_LENGTH_ORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];

const LITERAL_LENGTH_SYMBOLS = 286;
const DISTANCE_SYMBOLS = 30;

/**
 * Bit lengths of the literal/length code. 2 x 1/4 + 2 x 1/8 for the four bytes a 4-pixel module
 * row is made of, then 230 symbols of 10 bits and 52 of 11 fill the rest of the Kraft sum
 * exactly (460 + 52 = 512 of 2048): a complete code, as inflaters require.
 */
function literalLengthBits(): Uint8Array {
  const bits = new Uint8Array(LITERAL_LENGTH_SYMBOLS).fill(10);
  bits[0x00] = 2;
  bits[0xff] = 2;
  bits[0x0f] = 3;
  bits[0xf0] = 3;
  // The 52 longest codes go to the literals least likely in a QR image: the last bytes other than FF.
  for (let byte = 0xfe, left = 52; left > 0; byte--) {
    if (byte === 0xf0) continue;
    bits[byte] = 11;
    left--;
  }
  return bits;
}

/** Two distance symbols of 4 bits and 28 of 5: complete. */
function distanceBits(): Uint8Array {
  const bits = new Uint8Array(DISTANCE_SYMBOLS).fill(5);
  bits[0] = 4;
  bits[1] = 4;
  return bits;
}

function reversed(code: number, length: number): number {
  let out = 0;
  for (let i = 0; i < length; i++) out |= ((code >> i) & 1) << (length - 1 - i);
  return out;
}

/** Canonical Huffman codes for the bit lengths (RFC 1951 3.2.2), bit-reversed: the stream is packed from the least significant bit. */
function canonicalCodes(lengths: Uint8Array): Uint16Array {
  const count = new Uint16Array(16);
  for (const length of lengths) if (length) count[length] = (count[length] ?? 0) + 1;
  const next = new Uint16Array(16);
  for (let length = 1, code = 0; length < 16; length++) {
    code = (code + (count[length - 1] ?? 0)) << 1;
    next[length] = code;
  }
  const codes = new Uint16Array(lengths.length);
  for (let symbol = 0; symbol < lengths.length; symbol++) {
    const length = lengths[symbol] ?? 0;
    if (!length) continue;
    codes[symbol] = reversed(next[length] ?? 0, length);
    next[length] = (next[length] ?? 0) + 1;
  }
  return codes;
}

const LITERAL_BITS = literalLengthBits();
const LITERAL_CODES = canonicalCodes(LITERAL_BITS);
const DISTANCE_BITS = distanceBits();
const DISTANCE_CODES = canonicalCodes(DISTANCE_BITS);

/** Writes bits least significant first. */
class BitSink {
  bytes: Uint8Array;
  at = 0;
  private acc = 0;
  private pending = 0;

  constructor(capacity: number) {
    this.bytes = new Uint8Array(capacity);
  }

  put(value: number, length: number): void {
    this.acc |= value << this.pending;
    this.pending += length;
    while (this.pending >= 8) {
      this.bytes[this.at++] = this.acc & 0xff;
      this.acc >>>= 8;
      this.pending -= 8;
    }
  }

  flush(): void {
    if (this.pending > 0) this.bytes[this.at++] = this.acc & 0xff;
    this.acc = 0;
    this.pending = 0;
  }

  /** Bits written so far. */
  get length(): number {
    return this.at * 8 + this.pending;
  }
}

/**
 * The block header: final block, dynamic codes, and the two codes' bit lengths sent with a code
 * length code of eight 3-bit symbols (the lengths 0 to 5, 10 and 11; complete), one per symbol.
 * The same for every image, so it is written once.
 */
function blockHeader(): { bytes: Uint8Array; bits: number } {
  const used = [0, 1, 2, 3, 4, 5, 10, 11];
  const codeLengthBits = new Uint8Array(19);
  for (const length of used) codeLengthBits[length] = 3;
  const codeLengthCodes = canonicalCodes(codeLengthBits);
  const sent = CODE_LENGTH_ORDER.length - [...CODE_LENGTH_ORDER].reverse().findIndex((symbol) => (codeLengthBits[symbol] ?? 0) > 0);
  const sink = new BitSink(256);
  sink.put(1, 1); // BFINAL
  sink.put(2, 2); // BTYPE = 10, dynamic Huffman codes
  sink.put(LITERAL_LENGTH_SYMBOLS - 257, 5);
  sink.put(DISTANCE_SYMBOLS - 1, 5);
  sink.put(sent - 4, 4);
  for (let i = 0; i < sent; i++) sink.put(codeLengthBits[CODE_LENGTH_ORDER[i] ?? 0] ?? 0, 3);
  for (const lengths of [LITERAL_BITS, DISTANCE_BITS]) {
    for (const length of lengths) sink.put(codeLengthCodes[length] ?? 0, codeLengthBits[length] ?? 0);
  }
  const bits = sink.length;
  sink.flush();
  return { bytes: sink.bytes.slice(0, sink.at), bits };
}

const HEADER = blockHeader();

/** For each match length, its symbol's code then its extra bits, and how many bits that is. */
const LENGTH_CODE = new Uint32Array(MAX_MATCH + 1);
const LENGTH_CODE_BITS = new Uint8Array(MAX_MATCH + 1);
for (let symbol = LENGTH_BASES.length - 1, length = MAX_MATCH; length >= 3; length--) {
  while ((LENGTH_BASES[symbol] ?? 0) > length) symbol--;
  const bits = LITERAL_BITS[257 + symbol] ?? 0;
  LENGTH_CODE[length] = (LITERAL_CODES[257 + symbol] ?? 0) | ((length - (LENGTH_BASES[symbol] ?? 0)) << bits);
  LENGTH_CODE_BITS[length] = bits + (LENGTH_EXTRA[symbol] ?? 0);
}

function distanceCode(distance: number): { code: number; bits: number } {
  let symbol = DISTANCE_BASES.length - 1;
  while ((DISTANCE_BASES[symbol] ?? 0) > distance) symbol--;
  const bits = DISTANCE_BITS[symbol] ?? 0;
  return { code: (DISTANCE_CODES[symbol] ?? 0) | ((distance - (DISTANCE_BASES[symbol] ?? 0)) << bits), bits: bits + (DISTANCE_EXTRA[symbol] ?? 0) };
}

/** A scanline and how many times in a row it is drawn. */
export interface RepeatedRow {
  line: Uint8Array;
  times: number;
}

/**
 * The zlib stream of the scanlines `rows` stand for, in order. Every line has the same length
 * (`stride` bytes, its filter byte included), from 3 to 32768.
 */
export function deflateRepeatedRows(rows: readonly RepeatedRow[], stride: number): Buffer {
  if (!Number.isInteger(stride) || stride < 3 || stride > MAX_DISTANCE) throw new RangeError(`a scanline of ${stride} bytes cannot be matched to the one above`);
  const distance = distanceCode(stride);
  // Every line as 11-bit literals at worst, its repeats as matches of at most 33 bits (one per 256
  // bytes, and one more for the rest), the headers and the checksum.
  let capacity = 2 + HEADER.bytes.length + 16;
  for (const row of rows) capacity += Math.ceil((stride * 11) / 8) + (Math.ceil((row.times * stride) / 256) + 1) * 5;
  const sink = new BitSink(capacity);
  sink.bytes[0] = 0x78;
  sink.bytes[1] = 0x01;
  sink.at = 2;
  // The header's whole bytes, then its last bits.
  const whole = HEADER.bits >> 3;
  sink.bytes.set(HEADER.bytes.subarray(0, whole), 2);
  sink.at += whole;
  if (HEADER.bits & 7) sink.put(HEADER.bytes[whole] ?? 0, HEADER.bits & 7);

  let a = 1;
  let b = 0;
  let previous: Uint8Array | null = null;
  for (const { line, times } of rows) {
    if (line.length !== stride) throw new RangeError(`scanline of ${line.length} bytes, expected ${stride}`);
    if (times < 1) continue;
    let sum = 0;
    let weighted = 0;
    for (let i = 0; i < stride; i++) {
      const byte = line[i] ?? 0;
      sum += byte;
      weighted += (stride - i) * byte;
    }
    sum %= MOD_ADLER;
    weighted %= MOD_ADLER;
    for (let t = 0; t < times; t++) {
      b = (b + ((stride * a) % MOD_ADLER) + weighted) % MOD_ADLER;
      a = (a + sum) % MOD_ADLER;
    }
    // A line equal to the one before it is all one match.
    const same = previous !== null && sameBytes(previous, line);
    let matched = (times - (same ? 0 : 1)) * stride;
    if (!same) {
      for (let i = 0; i < stride; i++) {
        const byte = line[i] ?? 0;
        sink.put(LITERAL_CODES[byte] ?? 0, LITERAL_BITS[byte] ?? 0);
      }
    }
    while (matched > 0) {
      // No piece shorter than 3: a remainder of 1 or 2 borrows from the piece before it.
      const length = matched > MAX_MATCH && matched < MAX_MATCH + 3 ? matched - 3 : Math.min(matched, MAX_MATCH);
      sink.put(LENGTH_CODE[length] ?? 0, LENGTH_CODE_BITS[length] ?? 0);
      sink.put(distance.code, distance.bits);
      matched -= length;
    }
    previous = line;
  }
  sink.put(LITERAL_CODES[256] ?? 0, LITERAL_BITS[256] ?? 0);
  sink.flush();
  const out = Buffer.from(sink.bytes.buffer, sink.bytes.byteOffset, sink.at + 4);
  out.writeUInt32BE(((b << 16) | a) >>> 0, sink.at);
  return out;
}

function sameBytes(x: Uint8Array, y: Uint8Array): boolean {
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}
