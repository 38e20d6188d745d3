import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { Compile } from 'typebox/compile';
import { faultHook, lateAnswerHook } from '../fault.hook.js';
import { statusCallHook } from '../status-calls.js';
import { operation } from '../fault.registry.js';
import { mongoFromDecimal, mongoToFixed2 } from '../simulator.money.js';
import type { SearchField, SettlementRow, SimInvoice, SimPayment } from '../simulator.state.js';
import { isFinanceDay, toMongolianLocal } from '../simulator.time.js';
import { pickSearch } from './search-query.helper.js';
import type { SourceRouteOptions } from './source-routes.types.js';

/**
 * Tax authority: snake_case, amounts as "12000.00" strings, numeric status codes,
 * "YYYY-MM-DD HH:mm:ss" local (UTC+8) times, year as text, `{ result }` envelope.
 */

const BILL_STATUS = { open: 0, paid: 1, canceled: 9 } as const;
const PAYMENT_STATUS = { submitted: 10, confirmed: 20, canceled: 30, rejected: 40 } as const;
const SEARCH_PARAMS: Record<string, SearchField> = { tin: 'register', plate_no: 'vehicleNo', tax_ref: 'taxRef' };

const SubmitBody = Compile(Type.Object(
  { payment_id: Type.String({ minLength: 1 }), bill_no: Type.String({ minLength: 1 }), paid_amount: Type.String() },
  { additionalProperties: false },
));

const localOrNull = (instant: Date | null): string | null => (instant ? toMongolianLocal(instant) : null);

function toWireBill(invoice: SimInvoice) {
  return {
    bill_no: invoice.refNum,
    bill_desc: invoice.description,
    bill_amount: mongoToFixed2(invoice.amountMongo),
    status_code: BILL_STATUS[invoice.status],
    due_date: localOrNull(invoice.dueDate),
    issue_date: localOrNull(invoice.issuedAt),
    taxpayer_tin: invoice.payer?.register ?? null,
    taxpayer_name: invoice.payer?.name ?? null,
    org_code: invoice.payee.id,
    org_name: invoice.payee.name,
    plate_no: invoice.vehicleNo,
    tax_ref: invoice.taxRef,
    tax_year: invoice.year === null ? null : String(invoice.year),
    linked_bill_nos: invoice.linkedRefNums,
    ...invoice.wire,
  };
}

function toWirePayment(payment: SimPayment) {
  return {
    payment_id: payment.paymentId,
    bill_no: payment.refNum,
    paid_amount: mongoToFixed2(payment.amountMongo),
    status_code: PAYMENT_STATUS[payment.status],
    confirmed_at: localOrNull(payment.confirmedAt),
  };
}

function toWireSettlement({ payment, invoice }: SettlementRow) {
  return {
    payment_id: payment.paymentId,
    bill_no: payment.refNum,
    paid_amount: mongoToFixed2(payment.amountMongo),
    taxpayer_tin: invoice.payer?.register ?? null,
    taxpayer_name: invoice.payer?.name ?? null,
    bill_desc: invoice.description,
    paid_at: localOrNull(payment.confirmedAt),
  };
}

function fail(reply: FastifyReply, status: number, errorCode: string, message: string) {
  return reply.code(status).send({ error_code: errorCode, error_msg: message });
}

export const etaxRoutes: FastifyPluginAsync<SourceRouteOptions> = async (app, { state, closing }) => {
  app.addHook('onRequest', statusCallHook('etax', state.statusCalls));
  app.addHook('onRequest', faultHook('etax', state, closing));
  app.addHook('onSend', lateAnswerHook(closing));

  app.get<{ Querystring: Record<string, string | undefined> }>('/v2/bills', operation('search'), async (request, reply) => {
    const search = pickSearch(request.query, SEARCH_PARAMS);
    if (!search) return fail(reply, 400, 'E_BAD_REQUEST', 'give exactly one of tin, plate_no, tax_ref');
    return { result: { bills: state.search('etax', search.field, search.value).map(toWireBill) } };
  });

  app.get<{ Params: { billNo: string } }>('/v2/bills/:billNo', operation('invoice'), async (request, reply) => {
    const invoice = state.viewInvoice('etax', request.params.billNo);
    if (!invoice) return fail(reply, 404, 'E_NOT_FOUND', 'bill not found');
    return { result: { bills: [toWireBill(invoice)] } };
  });

  app.post('/v2/payments', operation('submit'), async (request, reply) => {
    const body = request.body;
    if (!SubmitBody.Check(body)) return fail(reply, 400, 'E_BAD_REQUEST', 'invalid payment request');
    const amountMongo = mongoFromDecimal(body.paid_amount);
    if (amountMongo === null) return fail(reply, 400, 'E_BAD_REQUEST', 'paid_amount must be a decimal string');
    const outcome = await state.submitRequest('etax', { paymentId: body.payment_id, refNum: body.bill_no, amountMongo }, closing);
    if (!outcome.accepted) return fail(reply, 422, 'E_REJECTED', outcome.reason);
    return { result: { payment_id: body.payment_id, status_code: 10, linked_bill_nos: outcome.payment.linkedRefNums } };
  });

  app.get<{ Params: { paymentId: string } }>('/v2/payments/:paymentId', operation('status'), async (request, reply) => {
    const payment = state.getPayment('etax', request.params.paymentId);
    if (!payment) return fail(reply, 404, 'E_NOT_FOUND', 'payment not found');
    return { result: { payment: toWirePayment(payment) } };
  });

  app.post<{ Params: { paymentId: string } }>('/v2/payments/:paymentId/cancel', operation('cancel'), async (request, reply) => {
    const payment = state.cancel('etax', request.params.paymentId);
    if (!payment) return fail(reply, 404, 'E_NOT_FOUND', 'payment not found');
    return { result: { payment: toWirePayment(payment) } };
  });

  app.get<{ Querystring: { finance_day?: string } }>('/v2/settlement', operation('settlement'), async (request, reply) => {
    const financeDay = request.query.finance_day ?? '';
    if (!isFinanceDay(financeDay)) return fail(reply, 400, 'E_BAD_REQUEST', 'finance_day must be YYYY-MM-DD');
    const items = state.settlement('etax', financeDay).map(toWireSettlement);
    return { result: { finance_day: financeDay, items } };
  });
};
