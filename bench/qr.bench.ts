/**
 * Micro-benchmark of the per-payment QR work: EMVCo payload + PNG (+ bank links), through
 * qr.service exactly as POST /payments calls it, and the PNG's deflate against node:zlib's.
 * Run with `npm run bench:qr`.
 * The last line is machine-read: `qr+png: <N> us per call` (median of the rounds).
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { crc32, deflateSync, inflateSync } from 'node:zlib';
import { PNG } from 'pngjs';
import QRCode from 'qrcode';
import { buildEmvcoPayload } from '../src/domain/emvco-qr.js';
import { buildQrMatrix, encodeMatrixPng, encodeQrPng, type QrMatrix } from '../src/codecs/qr-png.codec.js';
import { loadQrConfig } from '../src/adapters/qr-config.loader.js';
import { createQrService, type QrBuildInput } from '../src/payments/qr.service.js';

const WARMUP_CALLS = 2000;
const ROUNDS = 7;
const CALLS_PER_ROUND = 500;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

function usPerCall(calls: number, run: (i: number) => unknown): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) run(i);
  return Number(process.hrtime.bigint() - start) / 1000 / calls;
}

async function usPerAsyncCall(calls: number, run: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) await run();
  return Number(process.hrtime.bigint() - start) / 1000 / calls;
}

function roundsMedian(label: string, run: (i: number) => unknown, print: boolean): number {
  const results: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const us = usPerCall(CALLS_PER_ROUND, run);
    results.push(us);
    if (print) console.log(`  ${label} round ${round + 1}: ${us.toFixed(1)} us per call`);
  }
  return median(results);
}

// ---- the PNG's deflate: the hand-written stream (qr-image-deflate.codec.ts) against node:zlib ----

interface ZlibSetting {
  level: number;
  windowBits: number;
  memLevel: number;
}

/** A payment's image as the service draws it, and the scanlines node:zlib would deflate. */
interface DrawnImage {
  matrix: QrMatrix;
  png: Buffer;
  /** Signature and IHDR, the same whatever writes the IDAT. */
  head: Buffer;
  /** The scanlines, filter bytes included, as the IDAT inflates. */
  raw: Buffer;
}

interface Candidate {
  name: string;
  encode: (image: DrawnImage) => Buffer;
}

const DEFLATE_IMAGES = 256;
const SCREEN_ROUNDS = 5;
const DUEL_ROUNDS = 60;
/**
 * The hand-written deflate is kept while the quickest node:zlib setting takes at least this many
 * times its CPU per image, the whole PNG from the matrix on both sides (median of the rounds).
 */
const KEEP_RATIO = 1.5;
const SCALE = 4;
const MARGIN = 4;
const IEND = Buffer.from([0, 0, 0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82]);
const MODULE_PAIR_BYTES = [0xff, 0xf0, 0x0f, 0x00];
const settingName = (s: ZlibSetting) => `node:zlib level ${s.level}, windowBits ${s.windowBits}, memLevel ${s.memLevel}`;

function drawnImage(matrix: QrMatrix): DrawnImage {
  const png = encodeMatrixPng(matrix, SCALE, MARGIN);
  const idatLength = png.readUInt32BE(33);
  return { matrix, png, head: png.subarray(0, 33), raw: inflateSync(png.subarray(41, 41 + idatLength)) };
}

/**
 * Every scanline of the default drawing, as an encoder handing them to node:zlib has to draw them:
 * each module row once, two modules to a byte, then copied down to its scale.
 */
function drawnInFull({ size, modules }: QrMatrix): Buffer {
  const width = (size + 2 * MARGIN) * SCALE;
  const stride = 1 + Math.ceil(width / 8);
  const raw = Buffer.alloc(stride * width, 0xff);
  for (let at = 0; at < raw.length; at += stride) raw[at] = 0;
  for (let row = 0; row < size; row++) {
    const first = (MARGIN + row) * SCALE * stride;
    for (let col = 0, at = first + 1 + (MARGIN * SCALE) / 8; col < size; col += 2, at++) {
      const right = col + 1 < size ? (modules[row * size + col + 1] ?? 0) : 0;
      raw[at] = MODULE_PAIR_BYTES[((modules[row * size + col] ?? 0) << 1) | right] ?? 0xff;
    }
    for (let copy = 1; copy < SCALE; copy++) raw.copyWithin(first + copy * stride, first, first + stride);
  }
  return raw;
}

/** The same PNG with its IDAT deflated by node:zlib under `setting`. */
function zlibPng(head: Buffer, raw: Buffer, setting: ZlibSetting): Buffer {
  const idat = deflateSync(raw, setting);
  const chunk = Buffer.alloc(12 + idat.length);
  chunk.writeUInt32BE(idat.length, 0);
  chunk.write('IDAT', 4, 'latin1');
  idat.copy(chunk, 8);
  chunk.writeUInt32BE(crc32(chunk.subarray(4, 8 + idat.length)), 8 + idat.length);
  return Buffer.concat([head, chunk, IEND]);
}

function quartiles(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => (sorted[Math.floor((sorted.length - 1) * q)] ?? Number.NaN).toFixed(1);
  return `${at(0.5)} (${at(0.25)}-${at(0.75)})`;
}

const meanBytes = (images: DrawnImage[], encode: (image: DrawnImage) => Buffer) => images.reduce((sum, image) => sum + encode(image).length, 0) / images.length;
const samePixels = (a: Buffer, b: Buffer) => PNG.sync.read(a).data.equals(PNG.sync.read(b).data);
const medianRatio = (t: number[], base: number[]) => median(t.map((us, round) => us / (base[round] as number)));

/**
 * Microseconds of CPU and of wall time per image, each candidate's rounds in turn with the others'
 * and each round started by another, so a busier stretch of the machine is shared. On a shared
 * machine the wall clock also counts the time the process waited for a core; CPU time does not.
 */
function inTurn(candidates: Candidate[], images: DrawnImage[], rounds: number): { cpu: number[][]; wall: number[][] } {
  const cpu = candidates.map(() => [] as number[]);
  const wall = candidates.map(() => [] as number[]);
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < candidates.length; k++) {
      const at = (round + k) % candidates.length;
      const { encode } = candidates[at] as Candidate;
      const before = process.cpuUsage();
      const wallUs = usPerCall(images.length, (i) => encode(images[i] as DrawnImage));
      const used = process.cpuUsage(before);
      cpu[at]?.push((used.user + used.system) / images.length);
      wall[at]?.push(wallUs);
    }
  }
  return { cpu, wall };
}

/** Every setting's size, and its CPU for the deflate alone over a few rounds, to pick the settings worth a longer run. */
function screen(images: DrawnImage[]): { setting: ZlibSetting; us: number; bytes: number }[] {
  const settings: ZlibSetting[] = [];
  for (const level of [1, 6, 9]) for (const windowBits of [9, 10, 11, 12, 13, 14, 15]) for (const memLevel of [1, 2, 4, 8]) settings.push({ level, windowBits, memLevel });
  const deflateOnly = (setting: ZlibSetting) => (image: DrawnImage) => zlibPng(image.head, image.raw, setting);
  const { cpu } = inTurn(settings.map((setting) => ({ name: settingName(setting), encode: deflateOnly(setting) })), images, SCREEN_ROUNDS);
  const results = settings.map((setting, k) => ({ setting, us: median(cpu[k] ?? []), bytes: meanBytes(images, deflateOnly(setting)) }));
  for (const level of [1, 6, 9]) {
    const line = results.filter((r) => r.setting.level === level).map((r) => `w${r.setting.windowBits} m${r.setting.memLevel} ${r.us.toFixed(0)} us ${r.bytes.toFixed(0)} B`);
    for (let i = 0; i < line.length; i += 4) console.log(`    level ${level}: ${line.slice(i, i + 4).join(' | ')}`);
  }
  return results;
}

/** The service's PNG and node:zlib's, from the matrix on both sides, each checked to decode to the same pixels. */
function deflateCandidates(images: DrawnImage[], settings: ZlibSetting[]): Candidate[] {
  for (const image of images) if (!drawnInFull(image.matrix).equals(image.raw)) throw new Error('the full drawing is not the service\'s');
  const candidates: Candidate[] = [
    { name: 'hand-written deflate (the service)', encode: (image) => encodeMatrixPng(image.matrix, SCALE, MARGIN) },
    ...[...new Map(settings.map((setting) => [settingName(setting), setting])).values()].map((setting) => ({
      name: settingName(setting),
      encode: (image: DrawnImage) => zlibPng(image.head, drawnInFull(image.matrix), setting),
    })),
  ];
  for (const c of candidates) for (const image of images.slice(0, 16)) if (!samePixels(c.encode(image), image.png)) throw new Error(`${c.name} draws other pixels`);
  return candidates;
}

async function compareDeflates(): Promise<void> {
  const images = inputs.slice(0, DEFLATE_IMAGES).map((input) => drawnImage(buildQrMatrix(service.forPayment(null, input).qrText)));
  if (!images[0]?.png.equals(Buffer.from(sample.qrImage, 'base64'))) throw new Error('the bench draws another image than qr.service');
  console.log(`PNG deflate, on ${DEFLATE_IMAGES} distinct payments' images:`);
  console.log(`  node:zlib's settings, the deflate alone (CPU us per image, median of ${SCREEN_ROUNDS} rounds; mean PNG bytes):`);
  const screened = screen(images);
  const quickest = screened.reduce((a, b) => (b.us < a.us ? b : a));
  const smallest = screened.reduce((a, b) => (b.bytes < a.bytes || (b.bytes === a.bytes && b.us < a.us) ? b : a));
  const candidates = deflateCandidates(images, [quickest.setting, smallest.setting, { level: 1, windowBits: 15, memLevel: 8 }, { level: 6, windowBits: 15, memLevel: 8 }]);
  const { cpu, wall } = inTurn(candidates, images, DUEL_ROUNDS);
  const [handCpu, handWall] = [cpu[0], wall[0]] as number[][];
  console.log(`  matrix to PNG, in turn, ${DUEL_ROUNDS} rounds of ${images.length} images: us per image, median (quartiles) and median ratio to the hand-written's; mean PNG bytes:`);
  candidates.forEach((c, k) => {
    const [ck, wk] = [cpu[k], wall[k]] as number[][];
    console.log(
      `    ${c.name.padEnd(54)} CPU ${quartiles(ck as number[])} x${medianRatio(ck as number[], handCpu as number[]).toFixed(2)}, ` +
        `wall ${quartiles(wk as number[])} x${medianRatio(wk as number[], handWall as number[]).toFixed(2)}, ${meanBytes(images, c.encode).toFixed(0)} B`,
    );
  });
  const quickestRatio = medianRatio(cpu[1] as number[], handCpu as number[]);
  console.log(`  the hand-written deflate ${quickestRatio >= KEEP_RATIO ? 'stays' : 'no longer pays'}: node:zlib at its quickest takes x${quickestRatio.toFixed(2)} its CPU (kept from x${KEEP_RATIO})`);
}

const { banks, schemes } = await loadQrConfig();
// One cached image: with distinct payloads every call draws its PNG, as each new payment does.
const service = createQrService({ banks, schemes, shortUrlBase: 'https://pay.gov.mn/p', imageCacheSize: 1 });

// Distinct payment ids so every call builds a different payload, as in production.
const inputs: QrBuildInput[] = Array.from({ length: 1024 }, (_, i) => ({
  standard: i % 2 === 0 ? 'qrpay' : 'govstd',
  source: 'mof',
  paymentId: randomUUID(),
  amount: `${12000 + i}.50`,
  payeeId: 'GOV-MOF-01',
  payeeName: 'Сангийн яам',
  billNumber: `MOF-2025-${String(i).padStart(6, '0')}`,
}));
const build = (i: number): unknown => service.forPayment(null, inputs[i % inputs.length] as QrBuildInput);
const sample = service.forPayment(null, inputs[0] as QrBuildInput);
const matrix = buildQrMatrix(sample.qrText);

console.log(`QR benchmark: node ${process.version}, ${os.cpus().length} cpus (${os.cpus()[0]?.model ?? 'unknown'})`);
console.log(
  `sample payload: ${sample.qrText.length} chars, QR version ${(matrix.size - 17) / 4} (${matrix.size} modules), ` +
    `PNG ${Buffer.from(sample.qrImage, 'base64').length} bytes`,
);

usPerCall(WARMUP_CALLS, build);

const payloadOnly = roundsMedian('payload', (i) => buildEmvcoPayload({
  standard: 'qrpay', scheme: schemes, merchantAccount: 'MN-GOV-MOF-01', amount: '12000.50',
  payeeName: 'Сангийн яам', payeeNameLocal: 'Сангийн яам', city: schemes.merchantCity,
  billNumber: `MOF-${i}`, referenceLabel: 'REF',
}), false);
const matrixOnly = roundsMedian('matrix', () => buildQrMatrix(sample.qrText), false);
const pngOnly = roundsMedian('png', () => encodeQrPng(sample.qrText), false);
const libraryCreate = roundsMedian('qrcode.create', () => QRCode.create(sample.qrText, { errorCorrectionLevel: 'M' }), false);
const libraryPngRuns: number[] = [];
for (let round = 0; round < 3; round++) {
  libraryPngRuns.push(await usPerAsyncCall(100, () => QRCode.toBuffer(sample.qrText, { errorCorrectionLevel: 'M' })));
}

console.log('components (median of rounds):');
console.log(`  EMVCo payload only:                     ${payloadOnly.toFixed(1)} us per call`);
console.log(`  matrix (symbol + mask choice):          ${matrixOnly.toFixed(1)} us per call`);
console.log(`  matrix + PNG (encodeQrPng):             ${pngOnly.toFixed(1)} us per call`);
console.log('for comparison, the qrcode library alone:');
console.log(`  QRCode.create (its own mask choice):    ${libraryCreate.toFixed(1)} us per call`);
console.log(`  QRCode.toBuffer PNG path:               ${median(libraryPngRuns).toFixed(1)} us per call`);
await compareDeflates();
console.log(`qr.service build (payload + PNG + ${banks.length} bank links), ${ROUNDS} rounds x ${CALLS_PER_ROUND} calls:`);
const result = roundsMedian('build', build, true);
console.log(`qr+png: ${result.toFixed(1)} us per call`);

