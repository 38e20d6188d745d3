import { describe, expect, it } from 'vitest';
import { ApiError, apiErrorOf, createApiClient, describeError, errorLines, serviceErrorBody } from '../../src/http/page-ui/page-ui.js';

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, statusText: status === 400 ? 'Bad Request' : '', headers: { 'content-type': 'application/json', ...headers } });

describe('the pages\' error reading', () => {
  it('takes the service\'s error body: one message, or one per violation', () => {
    const one = apiErrorOf(404, 'Not Found', { statusCode: 404, error: 'Not Found', message: 'Payment not found' }, null);
    expect(one).toMatchObject({ status: 404, reason: 'Not Found', messages: ['Payment not found'], message: 'Payment not found', retryable: false });
    const many = apiErrorOf(400, 'Bad Request', { statusCode: 400, error: 'Bad Request', message: ['paymentId must be a uuid', 'to is invalid'] }, null);
    expect(many.message).toBe('paymentId must be a uuid; to is invalid');
    expect(errorLines(many, 'Search', () => '')).toEqual({ status: 'HTTP 400 Bad Request', text: 'Search: the request was refused', list: ['paymentId must be a uuid', 'to is invalid'] });
  });

  it('reads a refused payment (422) with its reference, and Retry-After in seconds', () => {
    const refused = apiErrorOf(422, 'Unprocessable Entity', { success: false, refNum: 'MOF-T-1', message: 'Amount does not match' }, null);
    expect(refused.body).toEqual({ success: false, refNum: 'MOF-T-1', message: 'Amount does not match' });
    expect(refused.statusLine).toBe('HTTP 422 Unprocessable Entity');
    const limited = apiErrorOf(429, 'Too Many Requests', { statusCode: 429, error: 'Too Many Requests', message: 'Rate limit exceeded' }, '3');
    expect(limited).toMatchObject({ retryAfterSeconds: 3, retryable: true });
    expect(errorLines(limited, '', (e) => ` — retry in ${e.retryAfterSeconds} s`).text).toBe('Rate limit exceeded — retry in 3 s');
  });

  it('does not take another shape for the service\'s: a proxy page is its status and text', () => {
    expect(serviceErrorBody('<html>Bad gateway</html>')).toBeNull();
    expect(serviceErrorBody({ message: 42 })).toBeNull();
    const proxy = apiErrorOf(502, 'Bad Gateway', null, null, 'upstream went away');
    expect(proxy).toMatchObject({ reason: 'Bad Gateway', messages: [], message: 'upstream went away', retryable: true });
    expect(describeError(proxy)).toBe('HTTP 502 Bad Gateway — upstream went away');
    expect(describeError(new Error('plain'))).toBe('plain');
    expect(errorLines(new Error('enter a value'), 'Search', () => ' (never added)')).toEqual({ status: 'Error', text: 'Search: enter a value', list: [] });
  });
});

describe('the pages\' API client', () => {
  it('sends the headers of the moment and JSON, and hands back the typed answer', async () => {
    const sent: { url: string; init: RequestInit | undefined }[] = [];
    let key = 'first';
    const api = createApiClient({
      base: '/api/v1',
      headers: () => ({ 'x-api-key': key }),
      fetch: async (url, init) => {
        sent.push({ url: String(url), init });
        return json(201, { id: 'p1' }, { 'idempotent-replayed': 'true' });
      },
    });
    key = 'second';
    const answer = await api.request<{ id: string }>('POST', '/payments', { body: { invoiceId: 'i1' }, headers: { 'x-idempotency-key': 'k' } });
    expect(answer.data.id).toBe('p1');
    expect(answer.headers.get('idempotent-replayed')).toBe('true');
    expect(sent[0]?.url).toBe('/api/v1/payments');
    expect(sent[0]?.init?.headers).toEqual({ accept: 'application/json', 'x-api-key': 'second', 'x-idempotency-key': 'k', 'content-type': 'application/json' });
    expect(sent[0]?.init?.body).toBe('{"invoiceId":"i1"}');
  });

  it('reports every answer, says when the credentials were refused, and makes no answer a network error', async () => {
    const seen: number[] = [];
    let refused = 0;
    let fail = false;
    const api = createApiClient({
      base: '',
      headers: () => ({}),
      onAnswer: (_method, _path, status) => seen.push(status),
      onUnauthorized: () => refused++,
      fetch: async () => {
        if (fail) throw new TypeError('Failed to fetch');
        return json(401, { statusCode: 401, error: 'Unauthorized', message: 'Invalid or missing admin token' });
      },
    });
    await expect(api.data('GET', '/admin/partners')).rejects.toMatchObject({ status: 401, message: 'Invalid or missing admin token' });
    expect(refused).toBe(1);
    fail = true;
    const err = await api.data('GET', '/admin/partners').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 0, retryable: true, statusLine: 'Network error' });
    expect((err as ApiError).message).toContain('Failed to fetch');
    expect(seen).toEqual([401, 0]);
  });
});
