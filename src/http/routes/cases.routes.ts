import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorBody, IdParams, bodyErrors, commonErrors } from '../../schemas/common.schema.js';
import { CaseBody, CaseCommentRequest, CaseConflictBody, CaseDetailBody, CaseListBody, CaseListQuery, OpenCaseBody } from '../../schemas/case.schema.js';
import type { CaseService } from '../../services/case.service.js';
import { documented } from './route-doc.helper.js';

const doc = documented('Cases');

export const caseRoutes: FastifyPluginAsyncTypebox<{ cases: CaseService }> = async (app, { cases }) => {
  app.post(
    '/cases',
    doc('Open a case about one of your payments: the customer says something went wrong', {
      body: OpenCaseBody,
      response: { 201: CaseBody, 404: ErrorBody, 409: CaseConflictBody, ...commonErrors, ...bodyErrors },
    }),
    async (request, reply) => reply.code(201).send(await cases.open(request.partner.id, request.body)),
  );

  app.get(
    '/cases',
    doc('Your cases, newest first', {
      querystring: CaseListQuery,
      response: { 200: CaseListBody, ...commonErrors },
    }),
    async (request) => cases.list(request.partner.id, request.query),
  );

  app.get(
    '/cases/:id',
    doc('One of your cases, with its comments', {
      params: IdParams,
      response: { 200: CaseDetailBody, 404: ErrorBody, ...commonErrors },
    }),
    async (request) => cases.get(request.partner.id, request.params.id),
  );

  app.post(
    '/cases/:id/comments',
    doc('Add a note to one of your cases', {
      params: IdParams,
      body: CaseCommentRequest,
      response: { 201: CaseDetailBody, 404: ErrorBody, 409: ErrorBody, ...commonErrors, ...bodyErrors },
    }),
    async (request, reply) => reply.code(201).send(await cases.comment(request.partner.id, request.params.id, request.body.text)),
  );
};
