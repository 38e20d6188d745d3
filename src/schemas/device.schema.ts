import { Type } from 'typebox';
import { IsoDateTime, Uuid } from './common.schema.js';
import { PLATFORMS } from '../domain/vocabulary.js';

const Platform = Type.Enum(PLATFORMS);

export const RegisterDeviceBody = Type.Object(
  {
    userId: Type.String({ minLength: 1, maxLength: 128, description: "The partner's end-user id" }),
    fcmToken: Type.String({ minLength: 1, maxLength: 4096, description: 'Firebase Cloud Messaging registration token' }),
    platform: Platform,
  },
  { additionalProperties: false },
);

export const DeviceBody = Type.Object({ id: Uuid, platform: Platform, createdAt: IsoDateTime });
