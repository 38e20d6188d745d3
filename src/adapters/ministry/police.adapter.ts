import type { Static } from 'typebox';
import type { AdapterOptions, ClosableMinistryAdapter } from './adapter-options.types.js';
import { isoFromEpochMs, nullable } from './date.mapping.js';
import { createHttpClient, SETTLEMENT_MAX_RESPONSE_BYTES } from './http-client.js';
import { storableKey } from './key.mapping.js';
import type { UpstreamInvoice } from '../../domain/ministry.port.js';
import type { InvoiceFilterKind } from '../../domain/vocabulary.js';
import { amountFromMongo, amountToMongo } from '../../domain/money.js';
import {
  PoliceFineList,
  PolicePaymentAnswer,
  PoliceSettlementAnswer,
  PoliceSubmitAnswer,
  PoliceError,
} from './police-wire.schema.js';
import { decodeBody, isMinistryNotFound, mapWire } from './wire-decode.helper.js';

const SOURCE = 'police';
const SEARCH_TYPE: Record<InvoiceFilterKind, string> = { ttd: 'REGISTER', vehicle: 'PLATE', taxRef: 'TAX_REF' };
const FINE_STATUS = { N: 'open', Y: 'paid', C: 'canceled' } as const;
const PAYMENT_STATUS = { WAITING: 'submitted', DONE: 'confirmed', REVERSED: 'canceled', REJECTED: 'rejected' } as const;

type PoliceFine = Static<typeof PoliceFineList>['FINES'][number];

function payerOf(fine: PoliceFine): UpstreamInvoice['payer'] {
  return fine.OFFENDER_REG === null ? null : { register: storableKey(fine.OFFENDER_REG), name: fine.OFFENDER_NAME ?? '' };
}

function toInvoice(fine: PoliceFine): UpstreamInvoice {
  return mapWire(SOURCE, `fine ${fine.FINE_NO}`, () => ({
    source: SOURCE,
    refNum: storableKey(fine.FINE_NO),
    description: fine.FINE_DESC,
    // amountFromMongo takes safe integers only, all below 10^14 tugrik: always storable.
    amount: amountFromMongo(fine.FINE_AMOUNT),
    status: FINE_STATUS[fine.FINE_STATUS],
    dueDate: nullable(fine.DUE_DATE, isoFromEpochMs),
    issuedAt: nullable(fine.ISSUED_AT, isoFromEpochMs),
    vehicleNo: nullable(fine.PLATE_NO, storableKey),
    taxRef: nullable(fine.TAX_REF, storableKey),
    payer: payerOf(fine),
    payee: { id: fine.AGENCY_ID, name: fine.AGENCY_NAME },
    year: fine.YEAR,
  }));
}

const paymentPath = (paymentId: string): string => `/police/api/payments/${encodeURIComponent(paymentId)}`;

/** The police system names days as YYYYMMDD. */
const compactDay = (financeDay: string): string => financeDay.replaceAll('-', '');

export function createPoliceAdapter(opts: AdapterOptions): ClosableMinistryAdapter {
  const http = createHttpClient({ source: SOURCE, ...opts });
  return {
    source: SOURCE,

    async search(filter) {
      const payload = { SEARCH_TYPE: SEARCH_TYPE[filter.kind], SEARCH_VALUE: filter.value };
      const { body } = await http.postJson('/police/api/fines/search', payload);
      return decodeBody(SOURCE, PoliceFineList, body, 'search').FINES.map(toInvoice);
    },

    async getByRef(refNum) {
      const response = await http.getJson(`/police/api/fines/${encodeURIComponent(refNum)}`, { acceptStatuses: [404] });
      if (isMinistryNotFound(SOURCE, PoliceError, response, 'invoice')) return null;
      const [fine] = decodeBody(SOURCE, PoliceFineList, response.body, 'fine').FINES;
      return fine ? toInvoice(fine) : null;
    },

    async submitPayment(req) {
      const payload = { PAYMENT_ID: req.paymentId, FINE_NO: req.refNum, PAY_AMOUNT: amountToMongo(req.amount) };
      const { body } = await http.postJson('/police/api/payments', payload);
      const answer = decodeBody(SOURCE, PoliceSubmitAnswer, body, 'submit');
      return 'PAYMENT' in answer
        ? { accepted: true, linkedRefNums: answer.PAYMENT.LINKED_FINE_NOS }
        : { accepted: false, reason: answer.RESULT_MSG };
    },

    async getPayment(ref) {
      const response = await http.getJson(paymentPath(ref.paymentId), { acceptStatuses: [404] });
      if (isMinistryNotFound(SOURCE, PoliceError, response, 'payment')) return { status: 'unknown', confirmedAt: null };
      const { PAYMENT } = decodeBody(SOURCE, PolicePaymentAnswer, response.body, 'payment');
      return mapWire(SOURCE, `payment ${ref.paymentId}`, () => ({
        status: PAYMENT_STATUS[PAYMENT.PAY_STATUS],
        confirmedAt: nullable(PAYMENT.CONFIRMED_AT, isoFromEpochMs),
      }));
    },

    async cancelPayment(ref) {
      const response = await http.postJson(`${paymentPath(ref.paymentId)}/cancel`, {}, { acceptStatuses: [404] });
      return isMinistryNotFound(SOURCE, PoliceError, response, 'cancel') ? 'unknown' : 'canceled';
    },

    async settlement(financeDay) {
      const { body } = await http.getJson(`/police/api/settlement/${encodeURIComponent(compactDay(financeDay))}`, { maxResponseBytes: SETTLEMENT_MAX_RESPONSE_BYTES });
      const { ENTRIES } = decodeBody(SOURCE, PoliceSettlementAnswer, body, 'settlement');
      return mapWire(SOURCE, `settlement ${financeDay}`, () =>
        ENTRIES.map((entry) => ({
          paymentId: storableKey(entry.PAYMENT_ID),
          refNum: storableKey(entry.FINE_NO),
          amount: amountFromMongo(entry.PAY_AMOUNT),
          payerReg: entry.OFFENDER_REG ?? '',
          payerName: entry.OFFENDER_NAME ?? '',
          description: entry.FINE_DESC,
          date: isoFromEpochMs(entry.CONFIRMED_AT),
        })),
      );
    },

    close: () => http.close(),
  };
}
