import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { REG } from '../helpers/fixtures.js';

/*
 * The SDK as a partner gets it: `npm pack` of sdk/ (prepack builds dist/), the tarball installed
 * into a scratch project outside the repository, then used there by package name, from plain
 * Node (ESM) against a running service and from a TypeScript consumer. The tarball is written to
 * a temporary directory, never into the clone; sdk/dist is a gitignored build output.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SDK_DIR = join(ROOT, 'sdk');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const PACKAGE = '@gov-payment-channel/sdk';

/** Async on purpose: the service answering the scratch project runs in this process. */
const run = promisify(execFile);

async function sh(file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<string> {
  try {
    const { stdout } = await run(file, args, { cwd, env: { ...process.env, ...env }, maxBuffer: 16 * 1024 * 1024, timeout: 90_000 });
    return stdout;
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new Error(`${file} ${args.join(' ')} failed in ${cwd}: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  }
}

/** A partner's program: imports the SDK by name, searches, pays, polls, and checks a signature. */
const ESM_SCRIPT = `
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import { BadRequestError, RedirectError, ResponseTooLargeError, SDK_VERSION, createClient, parseWebhook, parseWebhookRequest, verifyWebhook, verifyWebhookRequest, verifyWebhookRequestAsync } from '${PACKAGE}';
import { parseWebhookRequestAsync as parsePortable, verifyWebhookRequestAsync as verifyPortable } from '${PACKAGE}/webhook';

const api = createClient({ baseUrl: process.env.GPC_BASE_URL, apiKey: process.env.GPC_API_KEY, retryBaseMs: 10 });
const { invoices, total } = await api.invoices.search({ ttd: process.env.GPC_TTD });
const invoice = invoices.find((i) => i.status === 'open');
if (!invoice) throw new Error('no open invoice');
const created = await api.payments.create({ invoiceId: invoice.id });
let payment = await api.payments.get(created.id);
for (const deadline = Date.now() + 20_000; payment.status === 'submitted' && Date.now() < deadline; ) {
  await new Promise((r) => setTimeout(r, 100));
  payment = await api.payments.get(created.id);
}
const paidInvoice = await api.invoices.get(invoice.id);
const badRequest = await api.invoices.get('not-a-uuid').catch((e) => e);

// Catching up: every event of the payment, page after page, then a webhook registered after them recovers them.
const events = [];
for await (const event of api.events.iterate({ paymentId: payment.id, limit: 1 })) events.push(event);
const oneEvent = await api.events.get(events[0].id);

// Following the feed from the start: each event once, oldest first; aborting ends the loop cleanly.
const stop = new AbortController();
const followed = [];
for await (const event of api.events.follow({ afterSequence: 0, signal: stop.signal, pollIntervalMs: 20 })) {
  followed.push(event);
  if (followed.length === 2) stop.abort();
}
// Caught up: it polls, finds nothing, waits and polls again, until aborted (here as its third poll starts).
const idle = new AbortController();
let polls = 0;
const counting = createClient({
  baseUrl: process.env.GPC_BASE_URL,
  apiKey: process.env.GPC_API_KEY,
  fetch: (url, init) => {
    if (url.includes('afterSequence=')) polls += 1;
    if (polls === 3) idle.abort();
    return fetch(url, init);
  },
});
const extra = [];
for await (const event of counting.events.follow({ afterSequence: followed[1].sequence, signal: idle.signal, pollIntervalMs: 20 })) extra.push(event);
const hook = await api.webhooks.create({ url: 'http://127.0.0.1:9/hook', secret: 'whsec_pack_hook_0123', events: ['payment.submitted', 'payment.confirmed'] });
const paused = await api.webhooks.update(hook.id, { enabled: false });
const recovered = await api.webhooks.recover(hook.id, new Date(Date.now() - 3_600_000).toISOString());
const again = await api.webhooks.recover(hook.id, new Date(Date.now() - 3_600_000).toISOString());
const pending = await api.webhooks.deliveries(hook.id, { status: 'pending', paymentId: payment.id });
const rotated = await api.webhooks.rotateSecret(hook.id);
const fetched = await api.webhooks.get(hook.id);
await api.webhooks.delete(hook.id);

const secret = 'whsec_pack_test';
const body = JSON.stringify({ event: 'payment.confirmed', eventId: events[0].id, deliveryId: 'd-1', createdAt: new Date().toISOString(), data: { id: payment.id, amount: payment.amount } });
const signature = createHmac('sha256', secret).update(body).digest('hex');
const sentAt = String(Math.floor(Date.now() / 1000));
const standardHeaders = (at) => ({
  'webhook-id': events[0].id,
  'webhook-timestamp': at,
  'webhook-signature': 'v1,' + createHmac('sha256', secret).update(events[0].id + '.' + at + '.' + body).digest('base64'),
  'x-service-signature': signature,
});
const staleAt = String(Number(sentAt) - 360);

// The built SDK keeps the key at home: a redirect to another origin is refused, a long answer cut off.
const listen = (handler) => new Promise((resolve) => { const server = createServer(handler); server.listen(0, '127.0.0.1', () => resolve(server)); });
let heard = 0;
const elsewhere = await listen((_req, res) => { heard += 1; res.end(); });
const tricky = await listen((req, res) => {
  if (req.url.endsWith('/summary')) res.writeHead(200, { 'content-type': 'application/json' }).end('"' + 'x'.repeat(4096) + '"');
  else res.writeHead(307, { location: 'http://127.0.0.1:' + elsewhere.address().port + '/steal' }).end();
});
const guarded = createClient({ baseUrl: 'http://127.0.0.1:' + tricky.address().port + '/api/v1', apiKey: 'gpk_sandbox_pack', maxResponseBytes: 1024 });
const redirected = await guarded.payments.create({ invoiceId: invoice.id }).catch((e) => e);
const oversized = await guarded.reports.summary().catch((e) => e);
tricky.closeAllConnections();
tricky.close();
elsewhere.close();

console.log(JSON.stringify({
  resolved: import.meta.resolve('${PACKAGE}'),
  version: SDK_VERSION,
  count: invoices.length,
  total,
  invoice: { id: invoice.id, amount: invoice.amount },
  created: { id: created.id, status: created.status, amount: created.amount, invoiceId: created.invoiceId, hasQr: typeof created.qrpay?.qrText === 'string' },
  payment: { id: payment.id, status: payment.status, paidAt: payment.paidAt ?? null },
  invoiceStatus: paidInvoice.status,
  badRequest: { isBadRequest: badRequest instanceof BadRequestError, status: badRequest.status, messages: badRequest.messages?.length ?? 0 },
  webhook: {
    valid: verifyWebhook(Buffer.from(body), signature, secret),
    tampered: verifyWebhook(body.replace('d-1', 'd-2'), signature, secret),
    wrongSecret: verifyWebhook(body, signature, 'another'),
    parsed: parseWebhook(body, signature, secret).event,
    standard: verifyWebhookRequest(body, standardHeaders(sentAt), secret),
    standardStale: verifyWebhookRequest(body, standardHeaders(staleAt), secret),
    standardParsed: parseWebhookRequest(body, standardHeaders(sentAt), [secret]).eventId === events[0].id,
    webCrypto: await verifyWebhookRequestAsync(Buffer.from(body), standardHeaders(sentAt), secret),
    webCryptoStale: await verifyWebhookRequestAsync(body, standardHeaders(staleAt), secret),
    portable: (await parsePortable(body, new Headers(standardHeaders(sentAt)), [secret])).eventId === events[0].id,
    portableTampered: await verifyPortable(body.replace('d-1', 'd-2'), standardHeaders(sentAt), secret),
  },
  guard: {
    redirect: redirected instanceof RedirectError && redirected.status === 307 && redirected.location.endsWith('/steal'),
    heard,
    tooLarge: oversized instanceof ResponseTooLargeError && oversized.maxResponseBytes === 1024,
  },
  events: events.map((e) => e.type),
  eventIds: events.map((e) => e.id),
  oneEvent: oneEvent.id === events[0].id,
  followed: followed.map((e) => e.id),
  followedSequences: followed.map((e) => e.sequence),
  idle: { polls, extra: extra.length },
  hook: { paused: [paused.enabled, paused.disabledReason], recovered: recovered.queued, again: again.queued, pending: pending.items.map((i) => [i.status, i.paymentId === payment.id]), rotated: rotated.secret.length, fetched: fetched.enabled },
}));
`;

/** A TypeScript partner: type-checks against the shipped declarations only (nothing from sdk/src). */
const TS_CONSUMER = `
import { BadRequestError, CaseAlreadyOpenError, RedirectError, ResponseTooLargeError, SDK_VERSION, createClient, parseWebhook, parseWebhookRequest, verifyWebhook, verifyWebhookRequest } from '${PACKAGE}';
import type { ClientOptions, Invoice, InvoiceSearch, Payment, PaymentChannelClient, PaymentEvent, Webhook, WebhookMessage, WebhookRecoverQueued } from '${PACKAGE}';
import { parseWebhookRequestAsync, type WebhookMessage as PortableMessage } from '${PACKAGE}/webhook';

const options: ClientOptions = { baseUrl: 'http://127.0.0.1:1/api/v1', apiKey: 'gpk_sandbox_x', retries: 1, maxResponseBytes: 8 * 1024 * 1024 };
const api: PaymentChannelClient = createClient(options);

export function refusal(err: unknown): string | undefined {
  if (err instanceof RedirectError) return \`\${err.status} to \${err.location ?? '?'}\`;
  if (err instanceof ResponseTooLargeError) return \`over \${err.maxResponseBytes} bytes (HTTP \${err.status}, \${err.requestId ?? 'no id'})\`;
  return undefined;
}

export async function payFirstOpen(ttd: string): Promise<Payment | undefined> {
  const { invoices }: { invoices: Invoice[] } = await api.invoices.search({ ttd });
  const open = invoices.find((i) => i.status === 'open' || i.status === 'overdue');
  if (!open) return undefined;
  const created = await api.payments.create({ invoiceId: open.id }, { idempotencyKey: 'k-1' });
  return api.payments.get(created.id);
}

export function onDelivery(body: Buffer, signature: string | undefined): string | undefined {
  if (!verifyWebhook(body, signature, 'secret')) return undefined;
  const message: WebhookMessage = parseWebhook(body, signature, 'secret');
  return message.event === 'payment.confirmed' ? message.data.id : undefined;
}

export const messagesOf = (err: unknown): string[] => (err instanceof BadRequestError ? err.messages : []);

export async function confirmedSince(from: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const event of api.events.iterate({ type: 'payment.confirmed', from })) {
    if (event.type === 'payment.confirmed') ids.push(event.data.id);
  }
  return ids;
}

export async function followConfirmed(afterSequence: number, signal: AbortSignal): Promise<number> {
  let last = afterSequence;
  for await (const event of api.events.follow({ afterSequence, type: 'payment.confirmed', signal, pollIntervalMs: 500 })) {
    if (event.type === 'payment.confirmed') last = event.sequence;
  }
  return last;
}

export function onStandardDelivery(body: Buffer, headers: Record<string, string | string[] | undefined>): string {
  return verifyWebhookRequest(body, headers, ['new-secret', 'old-secret'], { toleranceSeconds: 300 }) ? parseWebhookRequest(body, headers, 'new-secret').eventId : '';
}

export async function onPortableDelivery(req: { text(): Promise<string>; headers: { get(name: string): string | null } }): Promise<number | undefined> {
  const message: PortableMessage = await parseWebhookRequestAsync(await req.text(), req.headers, ['new-secret', 'old-secret']);
  return message.event === 'payment.confirmed' ? message.data.amount : undefined;
}

// Known types narrow data; a type this SDK does not know comes through untyped.
export const describeEvent = (event: PaymentEvent): string => (event.type === 'payment.canceled' ? event.data.reason : event.type === 'payment.confirmed' ? String(event.data.amount) : String(event.type));

export async function raiseCase(paymentId: string, description: string): Promise<string> {
  try {
    return (await api.cases.open({ paymentId, type: 'paid_not_updated', description })).id;
  } catch (err) {
    if (!(err instanceof CaseAlreadyOpenError)) throw err;
    return (await api.cases.comment(err.caseId, description)).id;
  }
}

export const outcomeOf = (event: PaymentEvent): string | undefined => (event.type === 'case.resolved' ? event.data.resolution?.outcome : undefined);

export async function catchUp(webhookId: string, since: string): Promise<number> {
  const hook: Webhook = await api.webhooks.update(webhookId, { enabled: true });
  const { queued }: WebhookRecoverQueued = await api.webhooks.recover(hook.id, since);
  return queued;
}
export const version: string = SDK_VERSION;

// The declarations are real types, not \`any\`: these must be rejected.
// @ts-expect-error exactly one search filter
export const twoFilters: InvoiceSearch = { ttd: '1', vehicle: '2' };
// @ts-expect-error an invoice status is a string union
export const statusAsNumber: number = ({} as Invoice).status;
// @ts-expect-error the delivery log's statuses are pending, succeeded and failed
export const delivered = api.webhooks.deliveries('w', { status: 'delivered' });
`;

describe('SDK package: npm pack, install into a scratch project, use it', () => {
  let ctx: TestContext;
  let work: string;
  let tarball: string;
  let scratch: string;
  let version: string;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'gpc-sdk-pack-'));
    version = (JSON.parse(await readFile(join(SDK_DIR, 'package.json'), 'utf8')) as { version: string }).version;

    // prepack builds sdk/dist (gitignored); only the tarball is written, and only into `work`.
    await sh('npm', ['pack', '--pack-destination', work], SDK_DIR);
    const tarballs = (await readdir(work)).filter((f) => f.endsWith('.tgz'));
    expect(tarballs).toEqual([`gov-payment-channel-sdk-${version}.tgz`]);
    tarball = join(work, tarballs[0] ?? '');

    // The SDK has no runtime dependencies, so installing it needs no registry.
    scratch = join(work, 'scratch');
    await mkdir(scratch);
    await writeFile(join(scratch, 'package.json'), JSON.stringify({ name: 'scratch-partner', version: '1.0.0', private: true, type: 'module' }, null, 2));
    await sh('npm', ['install', tarball, '--no-audit', '--no-fund', '--ignore-scripts', '--offline'], scratch);

    ctx = await createTestContext({ autoApproveMs: 200 });
    await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  }, 120_000);

  afterAll(async () => {
    await ctx?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('packs only dist/ (with declarations), README.md and package.json', async () => {
    const files = (await sh('tar', ['-tzf', tarball], work))
      .split('\n')
      .filter(Boolean)
      .map((f) => f.replace(/^package\//, ''))
      .sort();
    expect(files.filter((f) => !f.startsWith('dist/') && f !== 'README.md' && f !== 'package.json')).toEqual([]);
    expect(files).toEqual(expect.arrayContaining(['README.md', 'package.json', 'dist/index.js', 'dist/index.d.ts', 'dist/client.d.ts', 'dist/types.d.ts', 'dist/webhook.d.ts', 'dist/errors.d.ts']));
    // Every module ships its declarations.
    for (const js of files.filter((f) => f.endsWith('.js'))) expect(files).toContain(js.replace(/\.js$/, '.d.ts'));

    const installed = JSON.parse(await readFile(join(scratch, 'node_modules', '@gov-payment-channel', 'sdk', 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(installed).toMatchObject({ name: PACKAGE, version, type: 'module' });
    expect(installed.dependencies ?? {}).toEqual({});
  }, 120_000);

  it('is imported by name from plain Node and pays an invoice of the running service', async () => {
    const { port } = ctx.app.server.address() as AddressInfo;
    const { apiKey } = await ctx.partner();
    await writeFile(join(scratch, 'partner.mjs'), ESM_SCRIPT);

    const stdout = await sh(process.execPath, ['partner.mjs'], scratch, { GPC_BASE_URL: `http://127.0.0.1:${port}/api/v1`, GPC_API_KEY: apiKey, GPC_TTD: REG });
    const out = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as {
      resolved: string;
      version: string;
      count: number;
      total: number;
      invoice: { id: string; amount: number };
      created: { id: string; status: string; amount: number; invoiceId: string; hasQr: boolean };
      payment: { id: string; status: string; paidAt: string | null };
      invoiceStatus: string;
      badRequest: { isBadRequest: boolean; status: number; messages: number };
      webhook: Record<string, boolean | string>;
      guard: { redirect: boolean; heard: number; tooLarge: boolean };
      events: string[];
      eventIds: string[];
      oneEvent: boolean;
      followed: string[];
      followedSequences: number[];
      idle: { polls: number; extra: number };
      hook: { paused: unknown[]; recovered: number; again: number; pending: unknown[][]; rotated: number; fetched: boolean };
    };

    // Resolved from the scratch project's node_modules, i.e. the installed tarball's dist/.
    expect(fileURLToPath(out.resolved)).toBe(join(scratch, 'node_modules', '@gov-payment-channel', 'sdk', 'dist', 'index.js'));
    expect(out.version).toBe(version);
    // The fixtures give the taxpayer eight invoices (test/helpers/fixtures.ts).
    expect(out.count).toBe(8);
    expect(out.total).toBeGreaterThan(0);
    expect(out.created).toMatchObject({ status: 'submitted', amount: out.invoice.amount, invoiceId: out.invoice.id, hasQr: true });
    expect(out.payment).toMatchObject({ id: out.created.id, status: 'confirmed' });
    expect(Number.isNaN(Date.parse(out.payment.paidAt ?? ''))).toBe(false);
    expect(out.invoiceStatus).toBe('paid');
    expect(out.badRequest).toMatchObject({ isBadRequest: true, status: 400 });
    expect(out.badRequest.messages).toBeGreaterThan(0);
    expect(out.webhook).toEqual({
      valid: true,
      tampered: false,
      wrongSecret: false,
      parsed: 'payment.confirmed',
      standard: true,
      standardStale: false,
      standardParsed: true,
      // The Web Crypto verifier, from the root and from the /webhook entry point alone.
      webCrypto: true,
      webCryptoStale: false,
      portable: true,
      portableTampered: false,
    });
    expect(out.guard).toEqual({ redirect: true, heard: 0, tooLarge: true });
    // Paged one by one, newest first: the confirmation, then the submission.
    expect(out.events).toEqual(['payment.confirmed', 'payment.submitted']);
    expect(out.oneEvent).toBe(true);
    // Followed from the start: the same two events, oldest first, in ascending sequence.
    expect(out.followed).toEqual([...out.eventIds].reverse());
    expect(out.followedSequences[0]).toBeLessThan(out.followedSequences[1] ?? 0);
    expect(out.idle).toEqual({ polls: 3, extra: 0 });
    expect(out.hook).toEqual({
      paused: [false, 'manual'],
      recovered: 2,
      again: 0,
      pending: [
        ['pending', true],
        ['pending', true],
      ],
      rotated: 50,
      fetched: false,
    });
  }, 120_000);

  it('type-checks a TypeScript consumer against the shipped declarations (NodeNext)', async () => {
    await writeFile(join(scratch, 'consumer.ts'), TS_CONSUMER);
    await writeFile(
      join(scratch, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          lib: ['ES2023'], // a Node project: no DOM, fetch types come from @types/node
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          skipLibCheck: false, // check the shipped .d.ts files too
          typeRoots: [join(ROOT, 'node_modules', '@types')],
          types: ['node'],
        },
        files: ['consumer.ts'],
      }),
    );
    await sh(process.execPath, [TSC, '--noEmit', '-p', 'tsconfig.json'], scratch);
  }, 120_000);
});
