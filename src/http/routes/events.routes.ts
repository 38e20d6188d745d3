import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorBody, IdParams, commonErrors } from '../../schemas/common.schema.js';
import { EventBody, EventListBody, EventListQuery } from '../../schemas/event.schema.js';
import type { EventService } from '../../services/event.service.js';
import { documented } from './route-doc.helper.js';

const doc = documented('Events');

export const eventRoutes: FastifyPluginAsyncTypebox<{ events: EventService }> = async (app, { events }) => {
  app.get(
    '/events',
    doc("This partner's payment events, newest first, whether or not it has a webhook", {
      querystring: EventListQuery,
      response: { 200: EventListBody, ...commonErrors },
    }),
    async (request) => events.list(request.partner.id, request.query),
  );

  app.get(
    '/events/:id',
    doc('One event of this partner', {
      params: IdParams,
      response: { 200: EventBody, 404: ErrorBody, ...commonErrors },
    }),
    async (request) => events.get(request.partner.id, request.params.id),
  );
};
