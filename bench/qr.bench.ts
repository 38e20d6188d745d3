/**
 * Micro-benchmark of the per-payment QR work: EMVCo payload + PNG (+ bank links), through
 * qr.service exactly as POST /payments calls it. Run with `npm run bench:qr`.
 * The last line is machine-read: `qr+png: <N> us per call` (median of the rounds).
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import QRCode from 'qrcode';
import { buildEmvcoPayload } from '../src/domain/emvco-qr.js';
import { buildQrMatrix, encodeQrPng } from '../src/domain/qr-png.js';
import { loadQrConfig } from '../src/adapters/qr-config.loader.js';
import { createQrService, type QrBuildInput } from '../src/services/qr.service.js';

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
console.log(`qr.service build (payload + PNG + ${banks.length} bank links), ${ROUNDS} rounds x ${CALLS_PER_ROUND} calls:`);
const result = roundsMedian('build', build, true);
console.log(`qr+png: ${result.toFixed(1)} us per call`);
