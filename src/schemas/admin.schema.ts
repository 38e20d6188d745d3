import { Type } from 'typebox';
import { Uuid } from './common.schema.js';

const QrStandard = Type.Union([Type.Literal('qrpay'), Type.Literal('govstd')]);
const Environment = Type.Union([Type.Literal('sandbox'), Type.Literal('production')]);

export const CreatePartnerBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    qrStandard: Type.Optional(QrStandard),
    environment: Type.Optional(Environment),
    active: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const UpdatePartnerBody = Type.Object(
  { active: Type.Optional(Type.Boolean()), qrStandard: Type.Optional(QrStandard) },
  { additionalProperties: false, minProperties: 1, 'x-violation': 'give active and/or qrStandard' },
);

const partnerFields = { id: Uuid, name: Type.String(), qrStandard: QrStandard, environment: Environment, active: Type.Boolean() };

export const PartnerBody = Type.Object({ ...partnerFields, createdAt: Type.String({ format: 'date-time' }) });

export const CreatedPartnerBody = Type.Object({ ...partnerFields, apiKey: Type.String({ description: 'Shown only once' }) });

export const RotatedKeyBody = Type.Object({
  apiKey: Type.String(),
  previousKeysExpireAt: Type.String({ format: 'date-time' }),
});
