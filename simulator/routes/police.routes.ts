import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { Compile } from 'typebox/compile';
import { faultHook, lateAnswerHook } from '../fault.hook.js';
import { statusCallHook } from '../status-calls.js';
import { operation } from '../fault.registry.js';
import type { SearchField, SettlementRow, SimInvoice, SimPayment } from '../simulator.state.js';
import { isFinanceDay } from '../simulator.time.js';
import type { SourceRouteOptions } from './source-routes.types.js';

/**
 * Traffic police: UPPER_SNAKE, amounts as integer möngö, epoch-millisecond times,
 * `{ RESULT_CODE, ... }` envelope where a non-zero code is a refusal (HTTP 200).
 */

const FINE_STATUS = { open: 'N', paid: 'Y', canceled: 'C' } as const;
const PAY_STATUS = { submitted: 'WAITING', confirmed: 'DONE', canceled: 'REVERSED', rejected: 'REJECTED' } as const;
const SEARCH_TYPES: Record<string, SearchField> = { REGISTER: 'register', PLATE: 'vehicleNo', TAX_REF: 'taxRef' };
const REFUSED = 2001;

const SearchBody = Compile(Type.Object(
  {
    SEARCH_TYPE: Type.Union([Type.Literal('REGISTER'), Type.Literal('PLATE'), Type.Literal('TAX_REF')]),
    SEARCH_VALUE: Type.String({ minLength: 1 }),
  },
  { additionalProperties: false },
));

const SubmitBody = Compile(Type.Object(
  { PAYMENT_ID: Type.String({ minLength: 1 }), FINE_NO: Type.String({ minLength: 1 }), PAY_AMOUNT: Type.Integer() },
  { additionalProperties: false },
));

const epochOrNull = (instant: Date | null): number | null => instant?.getTime() ?? null;

function toWireFine(invoice: SimInvoice) {
  return {
    FINE_NO: invoice.refNum,
    FINE_DESC: invoice.description,
    FINE_AMOUNT: invoice.amountMongo,
    FINE_STATUS: FINE_STATUS[invoice.status],
    DUE_DATE: epochOrNull(invoice.dueDate),
    ISSUED_AT: epochOrNull(invoice.issuedAt),
    OFFENDER_REG: invoice.payer?.register ?? null,
    OFFENDER_NAME: invoice.payer?.name ?? null,
    AGENCY_ID: invoice.payee.id,
    AGENCY_NAME: invoice.payee.name,
    PLATE_NO: invoice.vehicleNo,
    TAX_REF: invoice.taxRef,
    YEAR: invoice.year,
    LINKED_FINE_NOS: invoice.linkedRefNums,
    ...invoice.wire,
  };
}

function toWirePayment(payment: SimPayment) {
  return {
    PAYMENT_ID: payment.paymentId,
    FINE_NO: payment.refNum,
    PAY_AMOUNT: payment.amountMongo,
    PAY_STATUS: PAY_STATUS[payment.status],
    CONFIRMED_AT: epochOrNull(payment.confirmedAt),
  };
}

function toWireSettlement({ payment, invoice }: SettlementRow) {
  return {
    PAYMENT_ID: payment.paymentId,
    FINE_NO: payment.refNum,
    PAY_AMOUNT: payment.amountMongo,
    OFFENDER_REG: invoice.payer?.register ?? null,
    OFFENDER_NAME: invoice.payer?.name ?? null,
    FINE_DESC: invoice.description,
    CONFIRMED_AT: epochOrNull(payment.confirmedAt),
  };
}

function fail(reply: FastifyReply, status: number, message: string) {
  return reply.code(status).send({ RESULT_CODE: status, RESULT_MSG: message });
}

export const policeRoutes: FastifyPluginAsync<SourceRouteOptions> = async (app, { state, closing }) => {
  app.addHook('onRequest', statusCallHook('police', state.statusCalls));
  app.addHook('onRequest', faultHook('police', state, closing));
  app.addHook('onSend', lateAnswerHook(closing));

  app.post('/api/fines/search', operation('search'), async (request, reply) => {
    const body = request.body;
    if (!SearchBody.Check(body)) return fail(reply, 400, 'INVALID SEARCH');
    const field = SEARCH_TYPES[body.SEARCH_TYPE] ?? 'register';
    return { RESULT_CODE: 0, FINES: state.search('police', field, body.SEARCH_VALUE).map(toWireFine) };
  });

  app.get<{ Params: { fineNo: string } }>('/api/fines/:fineNo', operation('invoice'), async (request, reply) => {
    const invoice = state.viewInvoice('police', request.params.fineNo);
    if (!invoice) return fail(reply, 404, 'FINE NOT FOUND');
    return { RESULT_CODE: 0, FINES: [toWireFine(invoice)] };
  });

  app.post('/api/payments', operation('submit'), async (request, reply) => {
    const body = request.body;
    if (!SubmitBody.Check(body)) return fail(reply, 400, 'INVALID PAYMENT');
    const outcome = await state.submitRequest('police', { paymentId: body.PAYMENT_ID, refNum: body.FINE_NO, amountMongo: body.PAY_AMOUNT }, closing);
    if (!outcome.accepted) return { RESULT_CODE: REFUSED, RESULT_MSG: outcome.reason };
    return { RESULT_CODE: 0, PAYMENT: { ...toWirePayment(outcome.payment), LINKED_FINE_NOS: outcome.payment.linkedRefNums } };
  });

  app.get<{ Params: { paymentId: string } }>('/api/payments/:paymentId', operation('status'), async (request, reply) => {
    const payment = state.getPayment('police', request.params.paymentId);
    if (!payment) return fail(reply, 404, 'PAYMENT NOT FOUND');
    return { RESULT_CODE: 0, PAYMENT: toWirePayment(payment) };
  });

  app.post<{ Params: { paymentId: string } }>('/api/payments/:paymentId/cancel', operation('cancel'), async (request, reply) => {
    const payment = state.cancel('police', request.params.paymentId);
    if (!payment) return fail(reply, 404, 'PAYMENT NOT FOUND');
    return { RESULT_CODE: 0, PAYMENT: toWirePayment(payment) };
  });

  /** The police system names days as YYYYMMDD. */
  app.get<{ Params: { day: string } }>('/api/settlement/:day', operation('settlement'), async (request, reply) => {
    const { day } = request.params;
    const financeDay = `${day.slice(0, 4)}-${day.slice(4, 6)}-${day.slice(6)}`;
    if (!/^\d{8}$/.test(day) || !isFinanceDay(financeDay)) return fail(reply, 400, 'INVALID DAY');
    return { RESULT_CODE: 0, ENTRIES: state.settlement('police', financeDay).map(toWireSettlement) };
  });
};
