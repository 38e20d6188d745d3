import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMinistryAdapters, type ClosableMinistryAdapters } from '../../src/adapters/ministry/ministry.factory.js';
import { loadConfig } from '../../src/config/config.js';
import { SOURCES, type Source } from '../../src/domain/vocabulary.js';
import { capturingLogger, type LogLine } from '../helpers/log-capture.js';
import { REG } from '../helpers/fixtures.js';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { upstreamError } from '../helpers/upstream-error.js';

/*
 * Issue 60: every ministry answer is read against a bound, counted as it arrives. The shapes the
 * red team sent (an answer with millions of extra keys, one with a 180 MB string, one that never
 * ends) are each a quick `malformed` failure of that system alone, over real HTTP from the
 * simulator; the process-level cost under the production heap is oversized-answers-process.test.ts.
 */

let ctx: TestContext;
let adapters: ClosableMinistryAdapters;
let key: string;
let lines: LogLine[];
const closeAfter: { close(): unknown }[] = [];

const MOF_REF = 'MOF-T-1';
const REF: Record<Source, string> = { mof: MOF_REF, etax: 'ET-T-1', police: 'P-T-1' };
const SHAPES = ['huge-members', 'huge-string', 'endless'] as const;

const fault = async (body: Record<string, unknown>) => expect((await ctx.sim('/__control/faults', body)).statusCode).toBe(200);
const clear = () => Promise.all(SOURCES.map((source) => fault({ source, mode: 'none' })));
const search = () => ctx.api(key, { method: 'GET', url: `/api/v1/invoices?ttd=${REG}` });

async function okCount(source: Source, operation: string): Promise<number> {
  const text = await ctx.deps.metrics.registry.getSingleMetricAsString('ministry_call_duration_seconds');
  const line = text.split('\n').find((l) => l.startsWith(`ministry_call_duration_seconds_count{source="${source}",operation="${operation}",outcome="ok"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

async function malformedCount(source: Source, operation: string): Promise<number> {
  const text = await ctx.deps.metrics.registry.getSingleMetricAsString('ministry_call_errors_total');
  const line = text.split('\n').find((l) => l.startsWith(`ministry_call_errors_total{source="${source}",operation="${operation}",kind="malformed"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

/** A one-route server answering every request with `answer`, for what the simulator does not send. */
async function rawServer(answer: (res: ServerResponse) => void): Promise<string> {
  const server: Server = createServer((_req, res) => answer(res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closeAfter.push({ close: () => new Promise((resolve) => server.close(resolve)) });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function adaptersAt(url: string, maxResponseBytes?: number): ClosableMinistryAdapters {
  const built = createMinistryAdapters({ urls: { mof: url, etax: url, police: url }, timeoutMs: 3000, maxResponseBytes });
  closeAfter.push(built);
  return built;
}

beforeAll(async () => {
  const capture = capturingLogger();
  lines = capture.lines;
  // A breaker that opens on the third failure in a row, so a test can see the oversized answers count.
  ctx = await createTestContext({ logger: capture.logger, config: { circuitBreaker: { failureThreshold: 3, openMs: 30_000 } } });
  key = (await ctx.partner()).apiKey;
  adapters = adaptersAt(ctx.simulatorUrl);
});

afterAll(async () => {
  await Promise.all(closeAfter.map((c) => c.close()));
  await ctx?.close();
});

describe('the setting', () => {
  it('MINISTRY_MAX_RESPONSE_BYTES defaults to 1 MiB, and refuses less than 1 KiB', () => {
    expect(loadConfig({}).ministryMaxResponseBytes).toBe(1024 * 1024);
    expect(loadConfig({ MINISTRY_MAX_RESPONSE_BYTES: '65536' }).ministryMaxResponseBytes).toBe(65536);
    expect(() => loadConfig({ MINISTRY_MAX_RESPONSE_BYTES: '100' })).toThrow(/MINISTRY_MAX_RESPONSE_BYTES/);
  });
});

describe.each(SHAPES)('an answer of shape %s', (mode) => {
  it.each(SOURCES)('is a malformed answer from %s, read no further than the bound', async (source) => {
    await fault({ source, mode, operation: 'invoice' });
    try {
      const error = await upstreamError(adapters[source].getByRef(REF[source]));
      expect(error.source).toBe(source);
      expect(error.kind).toBe('malformed');
      expect(error.message).toMatch(/exceeds the 1048576 bytes allowed/);
    } finally {
      await clear();
    }
  });

  it("fails only mof's part of a search: the taxpayer still gets the other systems' invoices, and the failure is counted and logged", async () => {
    // Payees tell the systems apart in the partner's view (test/helpers/fixtures.ts).
    const healthy = (await search()).json<{ invoices: { payee: { id: string } }[] }>().invoices;
    expect(new Set(healthy.map((i) => i.payee.id))).toEqual(new Set(['ORG-100', 'ORG-200', 'ORG-300']));
    const before = await malformedCount('mof', 'search');
    const answered = { etax: await okCount('etax', 'search'), police: await okCount('police', 'search') };
    await fault({ source: 'mof', mode, operation: 'search' });
    try {
      const res = await search();
      expect(res.statusCode).toBe(200);
      // mof's part is what was stored from its last answer; etax and police answered live.
      expect(res.json<{ invoices: unknown[] }>().invoices).toHaveLength(healthy.length);
      expect(await malformedCount('mof', 'search')).toBe(before + 1);
      expect({ etax: await okCount('etax', 'search'), police: await okCount('police', 'search') }).toEqual({ etax: answered.etax + 1, police: answered.police + 1 });
      const logged = lines.filter((l) => l.msg === 'ministry call failed' && (l as LogLine & { source?: string }).source === 'mof');
      expect(JSON.stringify(logged.at(-1))).toMatch(/mof malformed: GET \/mof\/api\/invoices\?payerRegNo=.*exceeds the 1048576 bytes allowed/);
    } finally {
      await clear();
    }
  });
});

describe('the bound in the service', () => {
  it('counts oversized answers in the breaker of that system and operation, which then refuses', async () => {
    await fault({ source: 'police', mode: 'endless', operation: 'invoice' });
    const lookup = () => ctx.api(key, { method: 'GET', url: `/api/v1/invoices/ref/${REF.police}` });
    try {
      for (let i = 0; i < 3; i += 1) expect((await lookup()).statusCode).toBe(503);
      await clear();
      // The system answers again, but its circuit is open: the refusal is the breaker's.
      expect((await lookup()).statusCode).toBe(503);
      const open = await ctx.deps.metrics.registry.getSingleMetricAsString('ministry_circuit_open');
      expect(open).toContain('ministry_circuit_open{source="police",operation="getByRef"} 1');
      // Police's other operations are not held by it: its search still answers.
      const okBefore = await okCount('police', 'search');
      expect((await search()).statusCode).toBe(200);
      expect(await okCount('police', 'search')).toBe(okBefore + 1);
    } finally {
      await clear();
      ctx.advance(31_000);
    }
  });
});

describe('the bound in the client', () => {
  it('refuses a Content-Length above the bound before reading the body', async () => {
    let written = 0;
    const url = await rawServer((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(50 * 1024 * 1024) });
      // Only the start: a client that waited for the announced rest would time out instead.
      res.write('{"data":');
      written += 8;
    });
    const error = await upstreamError(adaptersAt(url).mof.getByRef('X-1'));
    expect(error.kind).toBe('malformed');
    expect(error.message).toMatch(/announces 52428800 bytes, more than the 1048576 allowed/);
    expect(written).toBe(8);
  });

  it('follows MINISTRY_MAX_RESPONSE_BYTES: a lower bound refuses what the default takes', async () => {
    await fault({ source: 'etax', mode: 'huge-members', size: 2000, operation: 'invoice' });
    try {
      expect(await adapters.etax.getByRef(REF.etax)).toMatchObject({ refNum: REF.etax });
      const error = await upstreamError(adaptersAt(ctx.simulatorUrl, 8 * 1024).etax.getByRef(REF.etax));
      expect(error.message).toMatch(/exceeds the 8192 bytes allowed/);
    } finally {
      await clear();
    }
  });

  it('reads a settlement past the general bound up to its own, and no further', async () => {
    // 2 MiB of padding: past MINISTRY_MAX_RESPONSE_BYTES, within the settlement's 32 MiB.
    await fault({ source: 'mof', mode: 'huge-string', size: 2 * 1024 * 1024, operation: 'settlement' });
    try {
      expect(await adapters.mof.settlement('2026-01-15')).toEqual([]);
      await fault({ source: 'mof', mode: 'huge-string', size: 33 * 1024 * 1024, operation: 'settlement' });
      const error = await upstreamError(adapters.mof.settlement('2026-01-15'));
      expect(error.kind).toBe('malformed');
      expect(error.message).toMatch(/exceeds the 33554432 bytes allowed/);
    } finally {
      await clear();
    }
  });
});

describe('decoding keeps only the members the wire schema names', () => {
  it('drops extra members, at any depth, and decodes the invoice as without them', async () => {
    const plain = await adapters.mof.getByRef(MOF_REF);
    const answer = (await ctx.simulator.inject({ method: 'GET', url: `/mof/api/invoices/${MOF_REF}` })).json<{ data: Record<string, unknown> }>();
    // Nested 450,000 deep (900 KB, within the bound): walking it, as copying every member did, overflows the stack.
    const deep = `${'['.repeat(450_000)}${']'.repeat(450_000)}`;
    const data = JSON.stringify({ ...answer.data, payer: { ...(answer.data.payer as object), extra: 'x' }, recipient: { ...(answer.data.recipient as object), nul: '\u0000' } });
    const url = await rawServer((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`{"data":${data.slice(0, -1)},"more":${deep}}}`);
    });
    expect(await adaptersAt(url).mof.getByRef(MOF_REF)).toEqual(plain);
  });

  it('still makes the text it keeps storable', async () => {
    const answer = (await ctx.simulator.inject({ method: 'GET', url: `/mof/api/invoices/${MOF_REF}` })).json<{ data: Record<string, unknown> }>();
    const url = await rawServer((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ data: { ...answer.data, title: 'a\u0000b\ud800c' } }));
    });
    expect(await adaptersAt(url).mof.getByRef(MOF_REF)).toMatchObject({ description: 'a\ufffdb\ufffdc' });
  });
});
