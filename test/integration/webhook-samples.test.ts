import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { captureRealDeliveries, type CapturedDelivery } from '../helpers/real-delivery.js';

/*
 * The verification samples of docs/webhooks.md (docs/samples/webhooks/), each run against real
 * deliveries of the service: it accepts them and refuses a tampered body or signature, for
 * either header. A language whose toolchain is not installed is skipped, saying so; .ci/run
 * installs php-cli (JDK 17 and python3 are on the CI machine). C# is shown but cannot run here:
 * Debian's repositories carry no .NET.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SAMPLES = join(ROOT, 'docs', 'samples', 'webhooks');
const SAMPLE_FILES = ['Verify.java', 'Verify.cs', 'verify.py', 'verify.php'];

const has = (command: string, args: string[]): boolean => spawnSync(command, args, { stdio: 'ignore' }).status === 0;

interface Language {
  name: string;
  available: boolean;
  why: string;
  /** The command that verifies one delivery (after `prepare`). */
  command: () => [string, string[]];
  prepare?: (work: string) => void;
}

let javaClasses = '';
let python = 'python3';
const LANGUAGES: Language[] = [
  {
    name: 'Java',
    available: has('java', ['-version']) && has('javac', ['-version']),
    why: 'no JDK (java and javac) on the PATH',
    // Compiled once for speed; one case below also runs it the documented way, `java Verify.java`.
    prepare: (work) => {
      javaClasses = join(work, 'java');
      const compiled = spawnSync('javac', ['-d', javaClasses, join(SAMPLES, 'Verify.java')], { encoding: 'utf8' });
      if (compiled.status !== 0) throw new Error(`javac failed: ${compiled.stderr}`);
    },
    command: () => ['java', ['-cp', javaClasses, 'Verify']],
  },
  {
    name: 'Python',
    available: has('python3', ['--version']),
    why: 'no python3 on the PATH',
    // The interpreter itself, not a version manager's shim in front of it (a shim costs more than the run).
    prepare: () => {
      python = spawnSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).stdout.trim() || 'python3';
    },
    command: () => [python, [join(SAMPLES, 'verify.py')]],
  },
  { name: 'PHP', available: has('php', ['--version']), why: 'no php on the PATH (Debian: apt-get install php-cli)', command: () => ['php', [join(SAMPLES, 'verify.php')]] },
];

/** Which headers a run passes to the sample, as the environment variables the samples read. */
type Check = 'standard' | 'service' | 'both';

function envOf(delivery: CapturedDelivery, check: Check, secret = delivery.secret): Record<string, string> {
  const h = delivery.headers;
  const standard = { WEBHOOK_ID: h['webhook-id'] ?? '', WEBHOOK_TIMESTAMP: h['webhook-timestamp'] ?? '', WEBHOOK_SIGNATURE: h['webhook-signature'] ?? '' };
  const service = { X_SERVICE_SIGNATURE: h['x-service-signature'] ?? '' };
  return { WEBHOOK_SECRET: secret, ...(check !== 'service' ? standard : {}), ...(check !== 'standard' ? service : {}) };
}

function run(command: [string, string[]], body: string, env: Record<string, string>): number | null {
  const result = spawnSync(command[0], command[1], { input: Buffer.from(body, 'utf8'), env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env }, encoding: 'utf8', timeout: 30_000 });
  if (result.status !== 0 && result.status !== 1) throw new Error(`${command.join(' ')} exited ${result.status}: ${result.stderr}`);
  return result.status;
}

/** The same body with one field more: what a forger would send. */
const tamperBody = (body: string): string => body.replace('"data":{', '"data":{"forged":true,');
/** One character in the middle of the (last) signature changed, to another digit valid in hex and base64 alike. */
const tamperSignature = (signature: string): string => {
  const at = signature.length - 20;
  return signature.slice(0, at) + (signature[at] === '0' ? '1' : '0') + signature.slice(at + 1);
};

describe('webhook verification samples (docs/webhooks.md), against real deliveries', () => {
  let deliveries: CapturedDelivery[] = [];
  let work = '';

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'gpc-webhook-samples-'));
    deliveries = await captureRealDeliveries();
    for (const language of LANGUAGES) if (language.available) language.prepare?.(work);
  }, 120_000);

  afterAll(async () => {
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('shows each sample in docs/webhooks.md exactly as the file that is run', async () => {
    const docs = await readFile(join(ROOT, 'docs', 'webhooks.md'), 'utf8');
    for (const file of SAMPLE_FILES) {
      const source = await readFile(join(SAMPLES, file), 'utf8');
      const shown = new RegExp(`<!-- sample: docs/samples/webhooks/${file.replace('.', '\\.')} -->\\n\`\`\`[a-z#]+\\n([\\s\\S]*?)\`\`\`\\n`).exec(docs)?.[1];
      expect(shown, `docs/webhooks.md shows ${file}`).toBeDefined();
      expect(shown, `${file} as shown in docs/webhooks.md`).toBe(source);
    }
  });

  it('captured real deliveries for both kinds of secret', () => {
    expect(deliveries.map((d) => d.event).sort()).toEqual(['payment.submitted', 'payment.submitted', 'webhook.test', 'webhook.test']);
    expect(new Set(deliveries.map((d) => d.secret)).size).toBe(2);
  });

  for (const language of LANGUAGES) {
    if (!language.available) console.log(`webhook samples: ${language.name} skipped: ${language.why}`);
    it.skipIf(!language.available)(`${language.name}: accepts every real delivery by either header and refuses a tampered one`, () => {
      const command = language.command();
      for (const d of deliveries) {
        const label = `${language.name}, ${d.event}, secret ${d.secret.slice(0, 6)}…`;
        for (const check of ['standard', 'service', 'both'] as const) expect(run(command, d.body, envOf(d, check)), `${label}: ${check} accepted`).toBe(0);
        for (const check of ['standard', 'service'] as const) {
          expect(run(command, tamperBody(d.body), envOf(d, check)), `${label}: tampered body refused by ${check}`).toBe(1);
          expect(run(command, d.body, envOf(d, check, `${d.secret}x`)), `${label}: wrong secret refused by ${check}`).toBe(1);
        }
        const forged = envOf(d, 'both');
        expect(run(command, d.body, { ...forged, WEBHOOK_SIGNATURE: tamperSignature(forged.WEBHOOK_SIGNATURE ?? '') }), `${label}: tampered webhook-signature refused`).toBe(1);
        expect(run(command, d.body, { ...forged, X_SERVICE_SIGNATURE: tamperSignature(forged.X_SERVICE_SIGNATURE ?? '') }), `${label}: tampered X-Service-Signature refused`).toBe(1);
        // A replay: the same signed delivery with webhook-timestamp moved past the 5-minute tolerance fails too.
        expect(run(command, d.body, { ...envOf(d, 'standard'), WEBHOOK_TIMESTAMP: String(Number(d.headers['webhook-timestamp']) - 600) }), `${label}: stale timestamp refused`).toBe(1);
      }
    }, 120_000);
  }

  it.runIf(LANGUAGES[0]?.available)('Java: runs the documented way, `java Verify.java`, from the source file alone', () => {
    const d = deliveries[0];
    if (!d) throw new Error('no delivery');
    expect(run(['java', [join(SAMPLES, 'Verify.java')]], d.body, envOf(d, 'both'))).toBe(0);
    expect(run(['java', [join(SAMPLES, 'Verify.java')]], tamperBody(d.body), envOf(d, 'both'))).toBe(1);
  }, 60_000);
});
