import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorBody, IdParams, bodyErrors, commonErrors } from '../../schemas/common.schema.js';
import {
  CancelBody,
  CreatePaymentBody,
  IdempotencyHeaders,
  PaymentBody,
  PaymentCreatedBody,
  PaymentFailedBody,
  SettlementBody,
  SettlementRequestBody,
} from '../../schemas/payment.schema.js';
import type { PaymentService } from '../../payments/payments.module.js';
import { idempotencyKeyOf } from '../idempotency-key.header.js';
import type { ReportService } from '../../services/report.service.js';

export const paymentRoutes: FastifyPluginAsyncTypebox<{ payments: PaymentService; reports: ReportService }> = async (app, opts) => {
  app.post(
    '/payments',
    {
      schema: {
        tags: ['Payments'],
        summary: 'Pay one invoice; returns the QR payload and bank deeplinks',
        headers: IdempotencyHeaders,
        body: CreatePaymentBody,
        response: { 201: PaymentCreatedBody, 404: ErrorBody, 409: ErrorBody, 422: Type.Union([PaymentFailedBody, ErrorBody]), ...commonErrors, ...bodyErrors },
      },
    },
    async (request, reply) => {
      const { 'x-user-id': userId, 'x-partner-reference': partnerReference } = request.headers;
      const outcome = await opts.payments.create(request.partner, { ...request.body, userId, partnerReference }, idempotencyKeyOf(request.headers));
      if (outcome.replayed) reply.header('idempotent-replayed', 'true');
      if (outcome.kind === 'created') return reply.code(201).send(outcome.body);
      // A refusal, first or replayed, carries this answer's own request id.
      return reply.code(422).send({ ...outcome.body, requestId: request.id });
    },
  );

  app.get(
    '/payments/:id',
    {
      schema: {
        tags: ['Payments'],
        summary: 'Payment status after a live confirmation with the ministry',
        params: IdParams,
        response: { 200: PaymentBody, 404: ErrorBody, ...commonErrors },
      },
    },
    async (request, reply) => {
      const { body, source } = await opts.payments.get(request.partner.id, request.params.id);
      reply.header('x-status-source', source);
      return body;
    },
  );

  app.delete(
    '/payments/:id',
    {
      schema: {
        tags: ['Payments'],
        summary: 'Cancel a submitted or confirmed payment; its invoices return to open',
        params: IdParams,
        response: { 200: CancelBody, 404: ErrorBody, 409: ErrorBody, ...commonErrors },
      },
    },
    async (request) => opts.payments.cancel(request.partner.id, request.params.id),
  );

  app.post(
    '/payments/report',
    {
      schema: {
        tags: ['Reports'],
        summary: "Daily settlement report of this partner's payments from every ministry system",
        body: SettlementRequestBody,
        response: { 200: SettlementBody, ...commonErrors, ...bodyErrors },
      },
    },
    async (request) => opts.reports.settlement(request.partner.id, request.body.financeDay),
  );
};
