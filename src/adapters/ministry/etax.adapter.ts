import type { Static } from 'typebox';
import type { AdapterOptions, ClosableMinistryAdapter } from './adapter-options.types.js';
import { isoFromMongolianLocal, nullable } from './date.mapping.js';
import {
  EtaxBillList,
  EtaxError,
  EtaxPaymentAnswer,
  EtaxSettlementAnswer,
  EtaxSubmitAccepted,
} from './etax-wire.schema.js';
import { createHttpClient, SETTLEMENT_MAX_RESPONSE_BYTES } from './http-client.js';
import { storableKey } from './key.mapping.js';
import type { UpstreamInvoice } from '../../domain/ministry.port.js';
import type { InvoiceFilterKind } from '../../domain/vocabulary.js';
import { amountToFixed2, storableAmount } from '../../domain/money.js';
import { decodeBody, isMinistryNotFound, mapWire } from './wire-decode.helper.js';

const SOURCE = 'etax';
const SEARCH_PARAM: Record<InvoiceFilterKind, string> = { ttd: 'tin', vehicle: 'plate_no', taxRef: 'tax_ref' };
const BILL_STATUS = { 0: 'open', 1: 'paid', 9: 'canceled' } as const;
const PAYMENT_STATUS = { 10: 'submitted', 20: 'confirmed', 30: 'canceled', 40: 'rejected' } as const;
const REFUSED = 422;

type EtaxBill = Static<typeof EtaxBillList>['result']['bills'][number];

/** The tax system splits the payer into two columns; both are null for an unnamed payer. */
function payerOf(bill: EtaxBill): UpstreamInvoice['payer'] {
  return bill.taxpayer_tin === null ? null : { register: storableKey(bill.taxpayer_tin), name: bill.taxpayer_name ?? '' };
}

function toInvoice(bill: EtaxBill): UpstreamInvoice {
  return mapWire(SOURCE, `bill ${bill.bill_no}`, () => ({
    source: SOURCE,
    refNum: storableKey(bill.bill_no),
    description: bill.bill_desc,
    amount: storableAmount(bill.bill_amount),
    status: BILL_STATUS[bill.status_code],
    dueDate: nullable(bill.due_date, isoFromMongolianLocal),
    issuedAt: nullable(bill.issue_date, isoFromMongolianLocal),
    vehicleNo: nullable(bill.plate_no, storableKey),
    taxRef: nullable(bill.tax_ref, storableKey),
    payer: payerOf(bill),
    payee: { id: bill.org_code, name: bill.org_name },
    year: bill.tax_year,
  }));
}

const paymentPath = (paymentId: string): string => `/etax/v2/payments/${encodeURIComponent(paymentId)}`;

export function createEtaxAdapter(opts: AdapterOptions): ClosableMinistryAdapter {
  const http = createHttpClient({ source: SOURCE, ...opts });
  return {
    source: SOURCE,

    async search(filter) {
      const query = new URLSearchParams({ [SEARCH_PARAM[filter.kind]]: filter.value });
      const { body } = await http.getJson(`/etax/v2/bills?${query}`);
      return decodeBody(SOURCE, EtaxBillList, body, 'search').result.bills.map(toInvoice);
    },

    async getByRef(refNum) {
      const response = await http.getJson(`/etax/v2/bills/${encodeURIComponent(refNum)}`, { acceptStatuses: [404] });
      if (isMinistryNotFound(SOURCE, EtaxError, response, 'invoice')) return null;
      const [bill] = decodeBody(SOURCE, EtaxBillList, response.body, 'bill').result.bills;
      return bill ? toInvoice(bill) : null;
    },

    async submitPayment(req) {
      const payload = { payment_id: req.paymentId, bill_no: req.refNum, paid_amount: amountToFixed2(req.amount) };
      const response = await http.postJson('/etax/v2/payments', payload, { acceptStatuses: [REFUSED] });
      if (response.status === REFUSED) {
        return { accepted: false, reason: decodeBody(SOURCE, EtaxError, response.body, 'submit').error_msg };
      }
      const { result } = decodeBody(SOURCE, EtaxSubmitAccepted, response.body, 'submit');
      return { accepted: true, linkedRefNums: result.linked_bill_nos };
    },

    async getPayment(ref) {
      const response = await http.getJson(paymentPath(ref.paymentId), { acceptStatuses: [404] });
      if (isMinistryNotFound(SOURCE, EtaxError, response, 'payment')) return { status: 'unknown', confirmedAt: null };
      const { payment } = decodeBody(SOURCE, EtaxPaymentAnswer, response.body, 'payment').result;
      return mapWire(SOURCE, `payment ${ref.paymentId}`, () => ({
        status: PAYMENT_STATUS[payment.status_code],
        confirmedAt: nullable(payment.confirmed_at, isoFromMongolianLocal),
      }));
    },

    async cancelPayment(ref) {
      const response = await http.postJson(`${paymentPath(ref.paymentId)}/cancel`, {}, { acceptStatuses: [404] });
      return isMinistryNotFound(SOURCE, EtaxError, response, 'cancel') ? 'unknown' : 'canceled';
    },

    async settlement(financeDay) {
      const query = new URLSearchParams({ finance_day: financeDay });
      const { body } = await http.getJson(`/etax/v2/settlement?${query}`, { maxResponseBytes: SETTLEMENT_MAX_RESPONSE_BYTES });
      const { items } = decodeBody(SOURCE, EtaxSettlementAnswer, body, 'settlement').result;
      return mapWire(SOURCE, `settlement ${financeDay}`, () =>
        items.map((item) => ({
          paymentId: storableKey(item.payment_id),
          refNum: storableKey(item.bill_no),
          amount: storableAmount(item.paid_amount),
          payerReg: item.taxpayer_tin ?? '',
          payerName: item.taxpayer_name ?? '',
          description: item.bill_desc,
          date: isoFromMongolianLocal(item.paid_at),
        })),
      );
    },

    close: () => http.close(),
  };
}
