import type { FixtureFile, InvoiceFixture } from '../../simulator/fixtures.schema.js';

export const REG = '7000001';
export const OTHER_REG = '7000002';
export const PLATE = '9999ТЕС';
export const TAX_REF = 'TR-TEST-0001';

const payee = {
  mof: { id: 'ORG-100', name: 'Сангийн яам' },
  etax: { id: 'ORG-200', name: 'Татварын ерөнхий газар' },
  police: { id: 'ORG-300', name: 'Цагдаагийн ерөнхий газар' },
};

/** An open invoice of `source` to the test taxpayer, with `extra` on top. */
export function invoiceFixture(source: 'mof' | 'etax' | 'police', refNum: string, extra: Partial<InvoiceFixture> = {}): InvoiceFixture {
  return {
    source,
    refNum,
    description: 'Төлбөр',
    amount: 10000,
    status: 'open',
    dueDate: '2099-12-31T00:00:00.000Z',
    issuedAt: '2025-01-15T02:00:00.000Z',
    payer: { register: REG, name: 'Тест ХХК' },
    payee: payee[source],
    vehicleNo: null,
    taxRef: null,
    ...extra,
  };
}

/** A small deterministic world: one taxpayer with invoices in every source, plus edge cases. */
export function testFixtures(): FixtureFile {
  return {
    invoices: [
      invoiceFixture('mof', 'MOF-T-1', { amount: 12000.5, year: 2025 }),
      invoiceFixture('mof', 'MOF-T-OVERDUE', { dueDate: '2024-01-01T00:00:00.000Z', amount: 5000 }),
      invoiceFixture('mof', 'MOF-T-PAID', { status: 'paid' }),
      invoiceFixture('mof', 'MOF-T-REJECT', { rejectPayment: true }),
      invoiceFixture('mof', 'MOF-T-LINK-A', { amount: 3000, linkedRefNums: ['MOF-T-LINK-B'] }),
      invoiceFixture('mof', 'MOF-T-LINK-B', { amount: 2000 }),
      invoiceFixture('etax', 'ET-T-1', { amount: 25000.25, taxRef: TAX_REF, year: '2025' }),
      invoiceFixture('etax', 'ET-T-OTHER', { payer: { register: OTHER_REG, name: 'Бусад' } }),
      invoiceFixture('police', 'P-T-1', { amount: 50000, vehicleNo: PLATE }),
      invoiceFixture('police', 'P-T-NOPAYER', { amount: 7000, vehicleNo: PLATE, payer: null }),
    ],
  };
}
