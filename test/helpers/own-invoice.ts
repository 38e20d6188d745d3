import { randomBytes } from 'node:crypto';
import type { InvoiceFixture } from '../../simulator/fixtures.schema.js';
import type { TestContext } from './test-context.js';

type Source = InvoiceFixture['source'];

const PAYEE: Record<Source, InvoiceFixture['payee']> = {
  mof: { id: 'ORG-100', name: 'Сангийн яам' },
  etax: { id: 'ORG-200', name: 'Татварын ерөнхий газар' },
  police: { id: 'ORG-300', name: 'Цагдаагийн ерөнхий газар' },
};

/** A value no fixture and no other test uses (a refNum, payer register, tax reference...). */
export function unique(prefix: string): string {
  return `${prefix}-${randomBytes(5).toString('hex').toUpperCase()}`;
}

/**
 * Adds one open invoice of the caller's own to the context's simulator: a fresh refNum and, unless
 * `extra` says otherwise, a fresh payer register, so no search of the shared fixtures finds it and
 * no other test pays, holds or changes it.
 */
export async function addOwnInvoice(ctx: TestContext, source: Source, extra: Partial<InvoiceFixture> = {}): Promise<InvoiceFixture> {
  const invoice: InvoiceFixture = {
    source,
    refNum: unique('OWN'),
    description: 'Төлбөр',
    amount: 10000,
    status: 'open',
    dueDate: '2099-12-31T00:00:00.000Z',
    issuedAt: '2025-01-15T02:00:00.000Z',
    payer: { register: unique('R'), name: 'Тест ХХК' },
    payee: PAYEE[source],
    vehicleNo: null,
    taxRef: null,
    ...extra,
  };
  const res = await ctx.sim('/__control/invoices', { invoices: [invoice] });
  if (res.statusCode !== 200) throw new Error(`adding invoice ${invoice.refNum} failed: ${res.body}`);
  return invoice;
}
