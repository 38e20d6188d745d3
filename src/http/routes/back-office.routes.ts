import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { BadRequestBody, ErrorBody, IdParams } from '../../schemas/common.schema.js';
import {
  AdminDeliveryBody,
  AdminDeliveryListBody,
  AdminPaymentDetailBody,
  AdminPaymentListBody,
  AuditListBody,
  AuditQuery,
  DeliveryQuery,
  DiscrepancyBody,
  DiscrepancyListBody,
  DiscrepancyQuery,
  PaymentSearchQuery,
  PushCountsBody,
  PushCountsQuery,
  ReconcileBody,
  ReconciliationRunBody,
  ResolveBody,
  RunListBody,
  RunListQuery,
} from '../../schemas/back-office.schema.js';
import { runView, type BackOfficeService } from '../../services/back-office.service.js';
import type { ReconciliationService } from '../../services/reconciliation.service.js';

export interface BackOfficeRouteOptions {
  backOffice: BackOfficeService;
  reconciliation: ReconciliationService;
}

const errors = { 400: BadRequestBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody };

/** Reconciliation, payments, deliveries and the audit log, across partners; inside the admin auth scope. */
export const backOfficeRoutes: FastifyPluginAsyncTypebox<BackOfficeRouteOptions> = async (app, { backOffice, reconciliation }) => {
  app.post('/admin/reconciliations', { schema: { body: ReconcileBody, response: { 200: ReconciliationRunBody, ...errors } } }, async (request) =>
    runView(await reconciliation.run(request.body.financeDay, request.operator)),
  );

  app.get('/admin/reconciliations', { schema: { querystring: RunListQuery, response: { 200: RunListBody, ...errors } } }, async (request) =>
    backOffice.runs(request.query.financeDay),
  );

  app.get('/admin/discrepancies', { schema: { querystring: DiscrepancyQuery, response: { 200: DiscrepancyListBody, ...errors } } }, async (request) =>
    backOffice.discrepancies(request.query),
  );

  app.post(
    '/admin/discrepancies/:id/resolve',
    { schema: { params: IdParams, body: ResolveBody, response: { 200: DiscrepancyBody, ...errors } } },
    async (request) => backOffice.resolveDiscrepancy(request.params.id, request.body.note, request.operator),
  );

  app.get('/admin/payments', { schema: { querystring: PaymentSearchQuery, response: { 200: AdminPaymentListBody, ...errors } } }, async (request) => {
    const { cursor, ...filter } = request.query;
    return backOffice.searchPayments(filter, cursor);
  });

  app.get('/admin/payments/:id', { schema: { params: IdParams, response: { 200: AdminPaymentDetailBody, ...errors } } }, async (request) =>
    backOffice.payment(request.params.id),
  );

  app.get('/admin/pushes', { schema: { querystring: PushCountsQuery, response: { 200: PushCountsBody, ...errors } } }, async (request) =>
    backOffice.pushCounts(request.query.partnerId),
  );

  app.get('/admin/deliveries', { schema: { querystring: DeliveryQuery, response: { 200: AdminDeliveryListBody, ...errors } } }, async (request) => {
    const { cursor, ...filter } = request.query;
    return backOffice.deliveries(filter, cursor);
  });

  app.post('/admin/deliveries/:id/redeliver', { schema: { params: IdParams, response: { 200: AdminDeliveryBody, ...errors } } }, async (request) =>
    backOffice.redeliver(request.params.id, request.operator),
  );

  app.get('/admin/audit', { schema: { querystring: AuditQuery, response: { 200: AuditListBody, ...errors } } }, async (request) => {
    const { cursor, ...filter } = request.query;
    return backOffice.auditLog(filter, cursor);
  });
};
