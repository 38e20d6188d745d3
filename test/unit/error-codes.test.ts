import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { ERROR_CODES, REFUSAL_CODES, failedPaymentCode, ministryRefusalCode, replayedRefusalCode, type ErrorCode } from '../../src/domain/errors.js';
import { STATUS_OF, codesOfStatus } from '../../src/http/plugins/errors.plugin.js';
import { componentSchemas } from '../../src/http/openapi/components.js';
import { ERROR_CODES as SDK_ERROR_CODES, type ErrorCode as SdkErrorCode, type PaymentRefusalCode } from '../../sdk/src/index.js';

/*
 * The closed list of error codes is one list: the domain's ERROR_CODES, the status each maps to,
 * docs/errors.md's table, the OpenAPI document's enums (here its components; every response in
 * test/integration/openapi.test.ts) and the SDK's ErrorCode union name the same codes.
 */

const ROOT = join(import.meta.dirname, '..', '..');

/** docs/errors.md's table rows between its markers: [code, status]. */
function documentedCodes(): [string, number][] {
  const doc = readFileSync(join(ROOT, 'docs', 'errors.md'), 'utf8');
  const table = doc.slice(doc.indexOf('<!-- error-codes:start -->'), doc.indexOf('<!-- error-codes:end -->'));
  return [...table.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \|/gm)].map((m) => [m[1] as string, Number(m[2])]);
}

describe('the closed list of error codes', () => {
  it('holds the codes the contract names, at their statuses', () => {
    const mandated: Record<string, number> = {
      invalid_request: 400,
      unauthenticated: 401,
      partner_inactive: 403,
      not_found: 404,
      idempotency_key_in_use: 409,
      illegal_transition: 409,
      idempotency_key_reuse: 422,
      invoice_not_payable: 422,
      amount_not_accepted: 422,
      ministry_rejected: 422,
      rate_limited: 429,
      ministry_unavailable: 503,
      service_unavailable: 503,
    };
    for (const [code, status] of Object.entries(mandated)) expect(STATUS_OF[code as ErrorCode], code).toBe(status);
    expect(new Set(ERROR_CODES).size).toBe(ERROR_CODES.length);
    expect(Object.keys(STATUS_OF).sort()).toEqual([...ERROR_CODES].sort());
  });

  it('is the list docs/errors.md documents, each at its status', () => {
    const documented = documentedCodes();
    expect(documented.map(([code]) => code)).toEqual([...ERROR_CODES]);
    for (const [code, status] of documented) expect(status, code).toBe(STATUS_OF[code as ErrorCode]);
    // Every row says when to retry and what to tell the customer.
    const doc = readFileSync(join(ROOT, 'docs', 'errors.md'), 'utf8');
    expect(doc).toContain('| code | status | meaning | retry? | what to tell the customer |');
  });

  it('is the enum of the OpenAPI error schemas', () => {
    const schemas = componentSchemas() as Record<string, { properties: { code: { enum: string[] } } }>;
    expect(schemas.Error?.properties.code.enum).toEqual([...ERROR_CODES]);
    expect(schemas.ValidationError?.properties.code.enum).toEqual(['invalid_request']);
    expect(schemas.PaymentFailed?.properties.code.enum).toEqual([...REFUSAL_CODES]);
    expect(schemas.WebhookLimitError?.properties.code.enum).toEqual(['webhook_limit_reached']);
    for (const code of REFUSAL_CODES) expect(codesOfStatus(422)).toContain(code);
  });

  it("is the SDK's ErrorCode union", () => {
    expect([...SDK_ERROR_CODES]).toEqual([...ERROR_CODES]);
    expectTypeOf<SdkErrorCode>().toEqualTypeOf<ErrorCode>();
    expectTypeOf<PaymentRefusalCode>().toEqualTypeOf<(typeof REFUSAL_CODES)[number]>();
  });
});

describe('the code of a refused payment', () => {
  it('reads the ministry reason only for an amount it does not take', () => {
    expect(ministryRefusalCode('amount does not match the invoice balance')).toBe('amount_not_accepted');
    expect(ministryRefusalCode('not accepted at this time')).toBe('ministry_rejected');
    expect(ministryRefusalCode('already paid')).toBe('ministry_rejected');
  });

  it('follows the move that failed the payment', () => {
    expect(failedPaymentCode('linked_invoice_taken', 'An invoice the ministry settles together with this one is already being paid or is paid')).toBe('invoice_not_payable');
    expect(failedPaymentCode('ministry_refused', 'amount does not match the invoice balance')).toBe('amount_not_accepted');
    expect(failedPaymentCode('ministry_refused', 'not accepted at this time')).toBe('ministry_rejected');
    expect(failedPaymentCode('never_received', 'Payment could not be submitted to the ministry system')).toBe('ministry_rejected');
    expect(failedPaymentCode('ministry_rejected', null)).toBe('ministry_rejected');
  });

  it('keeps a stored code on replay, and gives one stored before codes the code of its reason', () => {
    expect(replayedRefusalCode('amount_not_accepted', 'anything')).toBe('amount_not_accepted');
    expect(replayedRefusalCode(undefined, 'Invoice is already paid')).toBe('invoice_not_payable');
    expect(replayedRefusalCode(undefined, 'Another payment for this invoice is in progress')).toBe('invoice_not_payable');
    expect(replayedRefusalCode(undefined, 'An invoice the ministry settles together with this one is unknown to the ministry system')).toBe('invoice_not_payable');
    expect(replayedRefusalCode(undefined, 'amount does not match the invoice balance')).toBe('amount_not_accepted');
    expect(replayedRefusalCode('bogus', 'not accepted at this time')).toBe('ministry_rejected');
  });
});
