import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createContractChecker, type ContractChecker, type ContractDocument, type ObservedResponse } from '../helpers/contract.js';
import { createTestContext, type TestContext } from '../helpers/test-context.js';

/*
 * The contract check itself (test/helpers/contract.ts): test-context.ts runs it on every answer of
 * every integration test, so here it is shown to catch a drift rather than to pass.
 */

let ctx: TestContext;
let checker: ContractChecker;
beforeAll(async () => {
  ctx = await createTestContext();
  checker = createContractChecker((await ctx.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<ContractDocument>());
});
afterAll(() => ctx.close());

const summary = { total: 8, open: 6, overdue: 1, paid: 1, totalAmountDue: 107000.75 };
const answer = (over: Partial<ObservedResponse> = {}): ObservedResponse => ({
  method: 'GET',
  route: '/api/v1/reports/summary',
  statusCode: 200,
  headers: { 'x-request-id': 'r-1', 'content-type': 'application/json; charset=utf-8' },
  body: JSON.stringify(summary),
  ...over,
});

describe('the contract checker', () => {
  it('passes an answer that matches the document', () => {
    expect(checker.check(answer())).toEqual([]);
    const error = { statusCode: 404, message: 'Payment not found', error: 'Not Found', code: 'not_found', requestId: 'r-1' };
    expect(checker.check(answer({ method: 'DELETE', route: '/api/v1/payments/:id', statusCode: 404, body: JSON.stringify(error) }))).toEqual([]);
  });

  it('fails a body that drifted from the schema', () => {
    const { paid: _paid, ...missing } = summary;
    expect(checker.check(answer({ body: JSON.stringify(missing) }))?.join()).toMatch(/does not match the documented schema.*paid/);
    expect(checker.check(answer({ body: JSON.stringify({ ...summary, total: '8' }) }))?.join()).toMatch(/\/total must be number/);
    const pending = { success: true, id: '52c8dc3e-a593-457e-a6cf-59e6e03650b7', status: 'waiting', amount: 1, invoiceId: '52c8dc3e-a593-457e-a6cf-59e6e03650b7', invoiceIds: [] };
    expect(checker.check(answer({ method: 'POST', route: '/api/v1/payments', statusCode: 201, body: JSON.stringify(pending) }))?.join()).toMatch(/\/status must be equal to one of the allowed values/);
    expect(checker.check(answer({ body: 'not json' }))?.join()).toMatch(/not JSON/);
    // An error's code must be one of its status's, and every error names its request id.
    const wrongCode = { statusCode: 404, message: 'Payment not found', error: 'Not Found', code: 'rate_limited', requestId: 'r-1' };
    expect(checker.check(answer({ method: 'DELETE', route: '/api/v1/payments/:id', statusCode: 404, body: JSON.stringify(wrongCode) }))?.join()).toMatch(/\/code must be equal to one of the allowed values/);
    const noId = { statusCode: 404, message: 'Payment not found', error: 'Not Found', code: 'not_found' };
    expect(checker.check(answer({ method: 'DELETE', route: '/api/v1/payments/:id', statusCode: 404, body: JSON.stringify(noId) }))?.join()).toMatch(/requestId/);
  });

  it('fails a status the operation does not document', () => {
    expect(checker.check(answer({ statusCode: 418 }))?.join()).toMatch(/GET \/reports\/summary -> 418: status not documented/);
    expect(checker.check(answer({ route: '/api/v1/health/live', statusCode: 429 }))?.join()).toMatch(/status not documented/);
  });

  it('fails a required header that is missing, and a content type that is not JSON', () => {
    expect(checker.check(answer({ headers: { 'content-type': 'application/json' } }))?.join()).toMatch(/required header X-Request-Id missing/);
    expect(checker.check(answer({ statusCode: 429, body: JSON.stringify({ statusCode: 429, message: 'Too Many Requests', error: 'Too Many Requests', code: 'rate_limited', requestId: 'r-1' }) }))?.join()).toMatch(/Retry-After missing/);
    expect(checker.check(answer({ headers: { 'x-request-id': 'r-1', 'content-type': 'text/plain' } }))?.join()).toMatch(/content-type text\/plain/);
  });

  it('leaves out what is no documented operation (pages, the QR landing page, unknown routes)', () => {
    expect(checker.check(answer({ route: '/api/v1/sandbox' }))).toBeNull();
    expect(checker.check(answer({ route: '/q/:paymentId' }))).toBeNull();
    expect(checker.check(answer({ method: 'PATCH' }))).toBeNull();
  });
});

describe('the test context', () => {
  it("fails api() on an answer that breaks the document, and close() on one read through app.inject", async () => {
    const own = await createTestContext();
    let closed = false;
    try {
      // Drift simulated in the served document, before the first answer reads it.
      await own.app.ready();
      const doc = own.app.swagger() as unknown as ContractDocument & { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
      delete doc.paths['/reports/summary']?.get?.responses['200'];
      (doc.components?.schemas?.Liveness as { required: string[] }).required.push('uptime');

      const partner = await own.partner();
      await expect(own.api(partner.apiKey, { method: 'GET', url: '/api/v1/reports/summary' })).rejects.toThrow(/GET \/reports\/summary -> 200: status not documented/);
      expect((await own.app.inject({ method: 'GET', url: '/api/v1/health/live' })).statusCode).toBe(200);
      closed = true;
      await expect(own.close()).rejects.toThrow(/GET \/health\/live -> 200: body does not match the documented schema.*uptime/);
    } finally {
      if (!closed) await own.close();
    }
  });
});
