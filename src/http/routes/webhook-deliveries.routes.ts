import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorBody, IdParams, bodyErrors, commonErrors } from '../../schemas/common.schema.js';
import {
  DeliveryListBody,
  DeliveryListQuery,
  RecoverBody,
  RecoverQueuedBody,
  RedeliveryQueuedBody,
  WebhookDeliveryParams,
  WebhookTestQueuedBody,
} from '../../schemas/webhook.schema.js';
import type { WebhookService } from '../../services/webhook.service.js';
import { documented } from './route-doc.helper.js';

/** The Fastify instance a TypeBox route plugin is given. */
export type TypeboxApp = Parameters<FastifyPluginAsyncTypebox>[0];

const doc = documented('Webhooks');

/** What a webhook was sent, and sending it again: recovery, the delivery log, test and redelivery. */
export function registerWebhookDeliveryRoutes(app: TypeboxApp, webhooks: WebhookService): void {
  app.post(
    '/webhooks/:id/recover',
    doc('Send, once and now, every event since a time that this webhook has not received, retries waiting included', {
      params: IdParams,
      body: RecoverBody,
      response: { 202: RecoverQueuedBody, 404: ErrorBody, ...commonErrors, ...bodyErrors },
    }),
    async (request, reply) => {
      reply.code(202);
      return webhooks.recover(request.partner.id, request.params.id, request.body.since);
    },
  );

  app.get(
    '/webhooks/:id/deliveries',
    doc('Delivery attempts and pending deliveries of a webhook, newest first', {
      params: IdParams,
      querystring: DeliveryListQuery,
      response: { 200: DeliveryListBody, 404: ErrorBody, ...commonErrors },
    }),
    async (request) => webhooks.deliveries(request.partner.id, request.params.id, request.query),
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
}
