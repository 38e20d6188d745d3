import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { commonErrors } from '../../schemas/common.schema.js';
import { PaymentListBody, PaymentListQuery, SummaryBody } from '../../schemas/payment.schema.js';
import type { ReportService } from '../../services/report.service.js';

export const reportRoutes: FastifyPluginAsyncTypebox<{ reports: ReportService }> = async (app, { reports }) => {
  app.get(
    '/reports/summary',
    { schema: { tags: ['Reports'], summary: "Counts and amount due over the invoices this partner has retrieved", response: { 200: SummaryBody, ...commonErrors } } },
    async (request) => reports.summary(request.partner.id),
  );

  app.get(
    '/reports/payments',
    {
      schema: {
        tags: ['Reports'],
        summary: "This partner's payments, newest first",
        querystring: PaymentListQuery,
        response: { 200: PaymentListBody, ...commonErrors },
      },
    },
    async (request) => reports.listPayments(request.partner.id, request.query.page ?? 1, request.query.limit ?? 20),
  );
};
