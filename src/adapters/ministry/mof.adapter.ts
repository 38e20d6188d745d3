import type { Static } from 'typebox';
import type { AdapterOptions, ClosableMinistryAdapter } from './adapter-options.types.js';
import { isoFromIso, nullable } from './date.mapping.js';
import { createHttpClient, SETTLEMENT_MAX_RESPONSE_BYTES } from './http-client.js';
import { storableKey } from './key.mapping.js';
import type { UpstreamInvoice } from '../../domain/ministry.port.js';
import type { InvoiceFilterKind } from '../../domain/vocabulary.js';
import { amountFromNumber, amountToNumber } from '../../domain/money.js';
import {
  MofInvoiceList,
  MofInvoiceOne,
  MofPaymentAnswer,
  MofSettlementAnswer,
  MofSubmitAnswer,
  MofError,
} from './mof-wire.schema.js';
import { decodeBody, isMinistryNotFound, mapWire } from './wire-decode.helper.js';

const SOURCE = 'mof';
const SEARCH_PARAM: Record<InvoiceFilterKind, string> = { ttd: 'payerRegNo', vehicle: 'plateNo', taxRef: 'taxReference' };
const INVOICE_STATUS = { UNPAID: 'open', PAID: 'paid', CANCELLED: 'canceled' } as const;
const PAYMENT_STATUS = { PENDING: 'submitted', APPROVED: 'confirmed', REVERSED: 'canceled', REJECTED: 'rejected' } as const;

type MofInvoice = Static<typeof MofInvoiceOne>['data'];

function toInvoice(wire: MofInvoice): UpstreamInvoice {
  return mapWire(SOURCE, `invoice ${wire.invoiceNo}`, () => ({
    source: SOURCE,
    refNum: storableKey(wire.invoiceNo),
    description: wire.title,
    amount: amountFromNumber(wire.totalAmount),
    status: INVOICE_STATUS[wire.paymentStatus],
    dueDate: nullable(wire.dueDate, isoFromIso),
    issuedAt: nullable(wire.createdAt, isoFromIso),
    vehicleNo: nullable(wire.plateNo, storableKey),
    taxRef: nullable(wire.taxReference, storableKey),
    payer: wire.payer ? { register: storableKey(wire.payer.regNo), name: wire.payer.fullName } : null,
    payee: { id: wire.recipient.orgId, name: wire.recipient.orgName },
    year: wire.taxYear ?? null,
  }));
}

const paymentPath = (paymentId: string): string => `/mof/api/payments/${encodeURIComponent(paymentId)}`;

export function createMofAdapter(opts: AdapterOptions): ClosableMinistryAdapter {
  const http = createHttpClient({ source: SOURCE, ...opts });
  return {
    source: SOURCE,

    async search(filter) {
      const query = new URLSearchParams({ [SEARCH_PARAM[filter.kind]]: filter.value });
      const { body } = await http.getJson(`/mof/api/invoices?${query}`);
      return decodeBody(SOURCE, MofInvoiceList, body, 'search').data.map(toInvoice);
    },

    async getByRef(refNum) {
      const response = await http.getJson(`/mof/api/invoices/${encodeURIComponent(refNum)}`, { acceptStatuses: [404] });
      if (isMinistryNotFound(SOURCE, MofError, response, 'invoice')) return null;
      return toInvoice(decodeBody(SOURCE, MofInvoiceOne, response.body, 'invoice').data);
    },

    async submitPayment(req) {
      const payload = { paymentId: req.paymentId, invoiceNo: req.refNum, amount: amountToNumber(req.amount) };
      const { body } = await http.postJson('/mof/api/payments', payload);
      const { data } = decodeBody(SOURCE, MofSubmitAnswer, body, 'submit');
      return data.accepted
        ? { accepted: true, linkedRefNums: data.linkedInvoices }
        : { accepted: false, reason: data.rejectReason };
    },

    async getPayment(ref) {
      const response = await http.getJson(paymentPath(ref.paymentId), { acceptStatuses: [404] });
      if (isMinistryNotFound(SOURCE, MofError, response, 'payment')) return { status: 'unknown', confirmedAt: null };
      const { data } = decodeBody(SOURCE, MofPaymentAnswer, response.body, 'payment');
      return mapWire(SOURCE, `payment ${ref.paymentId}`, () => ({
        status: PAYMENT_STATUS[data.state],
        confirmedAt: nullable(data.approvedAt, isoFromIso),
      }));
    },

    async cancelPayment(ref) {
      const response = await http.postJson(`${paymentPath(ref.paymentId)}/cancel`, {}, { acceptStatuses: [404] });
      return isMinistryNotFound(SOURCE, MofError, response, 'cancel') ? 'unknown' : 'canceled';
    },

    async settlement(financeDay) {
      const { body } = await http.getJson(`/mof/api/settlements/${encodeURIComponent(financeDay)}`, { maxResponseBytes: SETTLEMENT_MAX_RESPONSE_BYTES });
      const { data } = decodeBody(SOURCE, MofSettlementAnswer, body, 'settlement');
      return mapWire(SOURCE, `settlement ${financeDay}`, () =>
        data.map((row) => ({
          paymentId: storableKey(row.paymentId),
          refNum: storableKey(row.invoiceNo),
          amount: amountFromNumber(row.amount),
          payerReg: row.payerRegNo ?? '',
          payerName: row.payerName ?? '',
          description: row.title,
          date: isoFromIso(row.settledAt),
        })),
      );
    },

    close: () => http.close(),
  };
}
