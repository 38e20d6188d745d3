import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { bodyErrors, commonErrors } from '../../schemas/common.schema.js';
import { DeviceBody, RegisterDeviceBody } from '../../schemas/device.schema.js';
import type { DeviceService } from '../../services/device.service.js';
import { documented } from './route-doc.helper.js';

const registerDoc = documented('Devices')('Register or update a push device (201 when new, 200 when already known)', {
  body: RegisterDeviceBody,
  response: { 200: DeviceBody, 201: DeviceBody, ...commonErrors, ...bodyErrors },
});

export const deviceRoutes: FastifyPluginAsyncTypebox<{ devices: DeviceService }> = async (app, { devices }) => {
  app.post('/devices', registerDoc, async (request, reply) => {
    const { created, device } = await devices.register(request.partner.id, request.body);
    return reply.code(created ? 201 : 200).send(device);
  });
};
