import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorBody, IdParams, bodyErrors, commonErrors } from '../../schemas/common.schema.js';
import {
  CreateWebhookBody,
  DeliveryListBody,
  DeliveryListQuery,
  RedeliveryQueuedBody,
  WebhookCreatedBody,
  WebhookDeletedBody,
  WebhookDeliveryParams,
  WebhookLimitBody,
  WebhookListBody,
  WebhookTestQueuedBody,
} from '../../schemas/webhook.schema.js';
import type { WebhookService } from '../../services/webhook.service.js';
import { documented } from './route-doc.helper.js';

const doc = documented('Webhooks');

export const webhookRoutes: FastifyPluginAsyncTypebox<{ webhooks: WebhookService }> = async (app, { webhooks }) => {
  app.post(
    '/webhooks',
    doc('Register a webhook; the response is the only one that shows the secret', {
      body: CreateWebhookBody,
      response: { 201: WebhookCreatedBody, 409: WebhookLimitBody, ...commonErrors, ...bodyErrors },
    }),
    async (request, reply) => {
      reply.code(201);
      return webhooks.register(request.partner.id, request.body);
    },
  );

  app.get('/webhooks', doc("This partner's webhooks, without secrets", { response: { 200: WebhookListBody, ...commonErrors } }), async (request) =>
    webhooks.list(request.partner.id),
  );

  app.delete(
    '/webhooks/:id',
    doc('Delete a webhook; deliveries not yet sent are dropped', {
      params: IdParams,
      response: { 200: WebhookDeletedBody, 404: ErrorBody, ...commonErrors },
    }),
    async (request) => webhooks.remove(request.partner.id, request.params.id),
  );

  app.get(
    '/webhooks/:id/deliveries',
    doc('Recent delivery attempts of a webhook, newest first', {
      params: IdParams,
      querystring: DeliveryListQuery,
      response: { 200: DeliveryListBody, 404: ErrorBody, ...commonErrors },
    }),
    async (request) => webhooks.deliveries(request.partner.id, request.params.id, request.query.limit ?? 100),
  );

  app.post(
    '/webhooks/:id/test',
    doc('Send a signed webhook.test delivery to this webhook only, whatever events it subscribed to', {
      params: IdParams,
      response: { 202: WebhookTestQueuedBody, 404: ErrorBody, ...commonErrors },
    }),
    async (request, reply) => {
      reply.code(202);
      return webhooks.sendTest(request.partner.id, request.params.id);
    },
  );

  app.post(
    '/webhooks/:id/deliveries/:deliveryId/redeliver',
    doc('Queue one more attempt of a delivery of this webhook (delivered, failed or pending), due now', {
      params: WebhookDeliveryParams,
      response: { 202: RedeliveryQueuedBody, 404: ErrorBody, ...commonErrors },
    }),
    async (request, reply) => {
      reply.code(202);
      return webhooks.redeliver(request.partner.id, request.params.id, request.params.deliveryId);
    },
  );
};
