import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { BadRequestBody, ErrorBody, IdParams } from '../../schemas/common.schema.js';
import { AdminCaseBody, AdminCaseListBody, AdminCaseQuery, CaseCommentRequest, ResolveCaseBody } from '../../schemas/case.schema.js';
import type { CaseService } from '../../services/case.service.js';

const errors = { 400: BadRequestBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody };

/** The operator's queue of partners' cases; inside the admin auth scope, every change audited. */
export const adminCaseRoutes: FastifyPluginAsyncTypebox<{ cases: CaseService }> = async (app, { cases }) => {
  app.get('/admin/cases', { schema: { querystring: AdminCaseQuery, response: { 200: AdminCaseListBody, ...errors } } }, async (request) => cases.queue(request.query));

  app.get('/admin/cases/:id', { schema: { params: IdParams, response: { 200: AdminCaseBody, ...errors } } }, async (request) => cases.show(request.params.id));

  app.post('/admin/cases/:id/take', { schema: { params: IdParams, response: { 200: AdminCaseBody, ...errors } } }, async (request) =>
    cases.take(request.params.id, request.operator),
  );

  app.post('/admin/cases/:id/comments', { schema: { params: IdParams, body: CaseCommentRequest, response: { 200: AdminCaseBody, ...errors } } }, async (request) =>
    cases.operatorComment(request.params.id, request.operator, request.body.text),
  );

  app.post('/admin/cases/:id/resolve', { schema: { params: IdParams, body: ResolveCaseBody, response: { 200: AdminCaseBody, ...errors } } }, async (request) =>
    cases.resolve(request.params.id, request.operator, request.body),
  );
};
