import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { Compile } from 'typebox/compile';
import { faultHook, lateAnswerHook } from '../fault.hook.js';
import { statusCallHook } from '../status-calls.js';
import { operation } from '../fault.registry.js';
import { mongoFromNumber, mongoToNumber } from '../simulator.money.js';
import type { SearchField, SimInvoice, SimPayment, SettlementRow } from '../simulator.state.js';
import { isFinanceDay } from '../simulator.time.js';
import { pickSearch } from './search-query.helper.js';
import type { SourceRouteOptions } from './source-routes.types.js';

/** Ministry of Finance: camelCase JSON, amounts as JSON numbers, ISO dates, `{ data }` envelope. */

const INVOICE_STATUS = { open: 'UNPAID', paid: 'PAID', canceled: 'CANCELLED' } as const;
const PAYMENT_STATE = { submitted: 'PENDING', confirmed: 'APPROVED', canceled: 'REVERSED', rejected: 'REJECTED' } as const;
const SEARCH_PARAMS: Record<string, SearchField> = { payerRegNo: 'register', plateNo: 'vehicleNo', taxReference: 'taxRef' };

const SubmitBody = Compile(Type.Object(
  { paymentId: Type.String({ minLength: 1 }), invoiceNo: Type.String({ minLength: 1 }), amount: Type.Number() },
  { additionalProperties: false },
));

function toWireInvoice(invoice: SimInvoice) {
  return {
    invoiceNo: invoice.refNum,
    title: invoice.description,
    totalAmount: mongoToNumber(invoice.amountMongo),
    paymentStatus: INVOICE_STATUS[invoice.status],
    dueDate: invoice.dueDate?.toISOString() ?? null,
    createdAt: invoice.issuedAt?.toISOString() ?? null,
    payer: invoice.payer ? { regNo: invoice.payer.register, fullName: invoice.payer.name } : null,
    recipient: { orgId: invoice.payee.id, orgName: invoice.payee.name },
    plateNo: invoice.vehicleNo,
    taxReference: invoice.taxRef,
    ...(invoice.year === null ? {} : { taxYear: invoice.year }),
    linkedInvoices: invoice.linkedRefNums,
    ...invoice.wire,
  };
}

function toWirePayment(payment: SimPayment) {
  return {
    paymentId: payment.paymentId,
    invoiceNo: payment.refNum,
    amount: mongoToNumber(payment.amountMongo),
    state: PAYMENT_STATE[payment.status],
    approvedAt: payment.confirmedAt?.toISOString() ?? null,
  };
}

function toWireSettlement({ payment, invoice }: SettlementRow) {
  return {
    paymentId: payment.paymentId,
    invoiceNo: payment.refNum,
    amount: mongoToNumber(payment.amountMongo),
    payerRegNo: invoice.payer?.register ?? null,
    payerName: invoice.payer?.name ?? null,
    title: invoice.description,
    settledAt: payment.confirmedAt?.toISOString() ?? null,
  };
}

function fail(reply: FastifyReply, status: number, code: string, message: string) {
  return reply.code(status).send({ error: { code, message } });
}

export const mofRoutes: FastifyPluginAsync<SourceRouteOptions> = async (app, { state, closing }) => {
  app.addHook('onRequest', statusCallHook('mof', state.statusCalls));
  app.addHook('onRequest', faultHook('mof', state, closing));
  app.addHook('onSend', lateAnswerHook(closing));

  app.get<{ Querystring: Record<string, string | undefined> }>('/api/invoices', operation('search'), async (request, reply) => {
    const search = pickSearch(request.query, SEARCH_PARAMS);
    if (!search) return fail(reply, 400, 'BAD_REQUEST', 'give exactly one of payerRegNo, plateNo, taxReference');
    return { data: state.search('mof', search.field, search.value).map(toWireInvoice) };
  });

  app.get<{ Params: { invoiceNo: string } }>('/api/invoices/:invoiceNo', operation('invoice'), async (request, reply) => {
    const invoice = state.viewInvoice('mof', request.params.invoiceNo);
    if (!invoice) return fail(reply, 404, 'NOT_FOUND', 'invoice not found');
    return { data: toWireInvoice(invoice) };
  });

  app.post('/api/payments', operation('submit'), async (request, reply) => {
    const body = request.body;
    if (!SubmitBody.Check(body)) return fail(reply, 400, 'BAD_REQUEST', 'invalid payment request');
    const amountMongo = mongoFromNumber(body.amount);
    if (amountMongo === null) return fail(reply, 400, 'BAD_REQUEST', 'amount has more than 2 decimals');
    const outcome = await state.submitRequest('mof', { paymentId: body.paymentId, refNum: body.invoiceNo, amountMongo }, closing);
    return outcome.accepted
      ? { data: { paymentId: body.paymentId, accepted: true, linkedInvoices: outcome.payment.linkedRefNums } }
      : { data: { paymentId: body.paymentId, accepted: false, rejectReason: outcome.reason } };
  });

  app.get<{ Params: { paymentId: string } }>('/api/payments/:paymentId', operation('status'), async (request, reply) => {
    const payment = state.getPayment('mof', request.params.paymentId);
    if (!payment) return fail(reply, 404, 'NOT_FOUND', 'payment not found');
    return { data: toWirePayment(payment) };
  });

  app.post<{ Params: { paymentId: string } }>('/api/payments/:paymentId/cancel', operation('cancel'), async (request, reply) => {
    const payment = state.cancel('mof', request.params.paymentId);
    if (!payment) return fail(reply, 404, 'NOT_FOUND', 'payment not found');
    return { data: toWirePayment(payment) };
  });

  app.get<{ Params: { financeDay: string } }>('/api/settlements/:financeDay', operation('settlement'), async (request, reply) => {
    const { financeDay } = request.params;
    if (!isFinanceDay(financeDay)) return fail(reply, 400, 'BAD_REQUEST', 'financeDay must be YYYY-MM-DD');
    return { data: state.settlement('mof', financeDay).map(toWireSettlement) };
  });
};
