import { describe, expect, it } from 'vitest';
import { formatTraceparent, parseTraceparent } from '../../src/domain/trace-context.js';
import { createLocalTracer } from '../../src/adapters/tracing/local.tracer.js';
import { loadConfig } from '../../src/config/config.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

describe('parseTraceparent (W3C, version 00)', () => {
  it('reads a valid header, with its tracestate', () => {
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-01`, 'a=1,b=2')).toEqual({ traceId: TRACE, spanId: SPAN, flags: '01', state: 'a=1,b=2' });
    expect(formatTraceparent({ traceId: TRACE, spanId: SPAN, flags: '00' })).toBe(`00-${TRACE}-${SPAN}-00`);
  });

  it.each([
    ['another version', `01-${TRACE}-${SPAN}-01`],
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['uppercase', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['an all-zero span id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['a short trace id', `00-${TRACE.slice(1)}-${SPAN}-01`],
    ['one flag digit', `00-${TRACE}-${SPAN}-1`],
    ['a trailing field', `00-${TRACE}-${SPAN}-01-00`],
    ['surrounding space', ` 00-${TRACE}-${SPAN}-01`],
    ['no header', undefined],
    ['a repeated header', [`00-${TRACE}-${SPAN}-01`, `00-${TRACE}-${SPAN}-01`]],
  ])('refuses %s', (_case, header) => {
    expect(parseTraceparent(header)).toBeNull();
  });

  it('drops a tracestate that is not printable ASCII or is too long', () => {
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-01`, 'a=\n')?.state).toBeUndefined();
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-01`, 'a'.repeat(513))?.state).toBeUndefined();
  });
});

describe('the local tracer (no export)', () => {
  it("makes a request a child of the partner's span and new spans children of the active one", async () => {
    const tracer = createLocalTracer();
    const request = tracer.startRequest(`00-${TRACE}-${SPAN}-01`, undefined);
    expect(request.traceId).toBe(TRACE);
    expect(request.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(request.spanId).not.toBe(SPAN);
    const seen = await new Promise<string | undefined>((resolve) => {
      tracer.enterRequest(request, () => {
        void tracer.span('child', {}, async () => tracer.outgoing().traceparent).then(resolve);
      });
    });
    expect(seen).toMatch(new RegExp(`^00-${TRACE}-[0-9a-f]{16}-01$`));
    expect(seen).not.toContain(request.spanId);
  });

  it('starts a fresh trace for a malformed header, and runs background work under a stored parent', async () => {
    const tracer = createLocalTracer();
    const fresh = tracer.startRequest(`00-${'0'.repeat(32)}-${SPAN}-01`, undefined);
    expect(fresh.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(fresh.traceId).not.toBe('0'.repeat(32));
    const stored = { traceId: TRACE, spanId: SPAN, flags: '01' };
    expect(await tracer.span('check', { parent: stored }, async () => tracer.active()?.traceId)).toBe(TRACE);
    expect(await tracer.span('ping', { parent: null }, async () => tracer.active()?.traceId)).not.toBe(TRACE);
  });
});

describe('tracing settings', () => {
  it('exports nothing by default, and reads the OpenTelemetry variables', () => {
    expect(loadConfig({}).otel).toEqual({ endpoint: null, serviceName: 'gov-payment-channel', sampler: 'parentbased_traceidratio', samplerArg: 0.1, scheduleDelayMs: 5000 });
    const on = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SERVICE_NAME: 'pay', OTEL_TRACES_SAMPLER: 'always_on', OTEL_TRACES_SAMPLER_ARG: '1' }).otel;
    expect(on).toMatchObject({ endpoint: 'http://collector:4318', serviceName: 'pay', sampler: 'always_on', samplerArg: 1 });
    expect(() => loadConfig({ OTEL_TRACES_SAMPLER: 'sometimes' })).toThrow();
    expect(() => loadConfig({ OTEL_TRACES_SAMPLER_ARG: '1.5' })).toThrow();
  });
});
