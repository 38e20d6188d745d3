import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorBody, IdParams, bodyErrors, commonErrors } from '../../schemas/common.schema.js';
import {
  CreateWebhookBody,
  RotateSecretBody,
  SecretRotatedBody,
  UpdateWebhookBody,
  WebhookBody,
  WebhookCreatedBody,
  WebhookDeletedBody,
  WebhookLimitBody,
  WebhookListBody,
} from '../../schemas/webhook.schema.js';
import type { WebhookService } from '../../services/webhook.service.js';
import { documented } from './route-doc.helper.js';
import { registerWebhookDeliveryRoutes, type TypeboxApp } from './webhook-deliveries.routes.js';

const doc = documented('Webhooks');

export const webhookRoutes: FastifyPluginAsyncTypebox<{ webhooks: WebhookService }> = async (app, { webhooks }) => {
  registerWebhookEndpointRoutes(app, webhooks);
  registerSecretRotationRoute(app, webhooks);
  registerWebhookDeliveryRoutes(app, webhooks);
};

/** Registering, reading, changing and deleting a partner's webhooks. */
function registerWebhookEndpointRoutes(app: TypeboxApp, webhooks: WebhookService): void {
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

  app.get(
    '/webhooks/:id',
    doc('One webhook of this partner, without its secret', {
      params: IdParams,
      response: { 200: WebhookBody, 404: ErrorBody, ...commonErrors },
    }),
    async (request) => webhooks.get(request.partner.id, request.params.id),
  );

  app.patch(
    '/webhooks/:id',
    doc('Change the url or events of a webhook, or disable and enable it', {
      params: IdParams,
      body: UpdateWebhookBody,
      response: { 200: WebhookBody, 404: ErrorBody, ...commonErrors, ...bodyErrors },
    }),
    async (request) => webhooks.update(request.partner.id, request.params.id, request.body),
  );

  app.delete(
    '/webhooks/:id',
    doc('Delete a webhook; deliveries not yet sent are dropped', {
      params: IdParams,
      response: { 200: WebhookDeletedBody, 404: ErrorBody, ...commonErrors },
    }),
    async (request) => webhooks.remove(request.partner.id, request.params.id),
  );
}

function registerSecretRotationRoute(app: TypeboxApp, webhooks: WebhookService): void {
  app.post(
    '/webhooks/:id/rotate-secret',
    {
      ...doc('Replace the secret; the previous one keeps signing beside it for WEBHOOK_SECRET_ROTATION_GRACE_MS', {
        params: IdParams,
        body: RotateSecretBody,
        response: { 200: SecretRotatedBody, 404: ErrorBody, ...commonErrors, ...bodyErrors },
      }),
      // Every field is optional, so no body at all means the same as `{}`: a generated secret.
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request) => webhooks.rotateSecret(request.partner.id, request.params.id, request.body.secret),
  );
}
