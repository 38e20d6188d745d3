import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { commonErrors } from '../../schemas/common.schema.js';
import { DeviceBody, RegisterDeviceBody } from '../../schemas/device.schema.js';
import type { DeviceService } from '../../services/device.service.js';

export const deviceRoutes: FastifyPluginAsyncTypebox<{ devices: DeviceService }> = async (app, { devices }) => {
  app.post(
    '/devices',
    {
      schema: {
        tags: ['Devices'],
        summary: 'Register or update a push device (201 when new, 200 when already known)',
        body: RegisterDeviceBody,
        response: { 200: DeviceBody, 201: DeviceBody, ...commonErrors },
      },
    },
    async (request, reply) => {
      const outcome = await devices.register(request.partner.id, request.body);
      reply.code(outcome.created ? 201 : 200);
      return outcome.device;
    },
  );
};
