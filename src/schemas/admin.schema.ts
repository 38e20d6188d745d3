import { Type } from 'typebox';
import { LiteralUnion, Uuid } from './common.schema.js';
import { KEY_ENVIRONMENTS, QR_STANDARDS } from '../domain/vocabulary.js';

const QrStandard = LiteralUnion(QR_STANDARDS);
const Environment = LiteralUnion(KEY_ENVIRONMENTS);

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
