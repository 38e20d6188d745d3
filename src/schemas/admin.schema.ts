import { Type } from 'typebox';
import { LiteralUnion, Nullable, Uuid } from './common.schema.js';
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

/** At most what the database column holds. */
const Limit = (description: string) => Type.Integer({ minimum: 1, maximum: 2_147_483_647, description });

const RateLimits = Type.Object(
  {
    perSecond: Limit('Requests per API key in any 1 second'),
    perMinute: Limit('Requests per API key in any 60 seconds'),
    perHour: Limit('Requests per API key in any 3,600 seconds'),
  },
  { additionalProperties: false },
);

const RateLimitsOrDefault = Nullable(RateLimits, {
  description: "The partner's own rate limits; null when it uses the service's defaults (RATE_LIMIT_PER_SECOND, _MINUTE, _HOUR)",
});

export const UpdatePartnerBody = Type.Object(
  { active: Type.Optional(Type.Boolean()), qrStandard: Type.Optional(QrStandard), rateLimits: Type.Optional(RateLimitsOrDefault) },
  { additionalProperties: false, minProperties: 1, 'x-violation': 'give active, qrStandard and/or rateLimits' },
);

const partnerFields = { id: Uuid, name: Type.String(), qrStandard: QrStandard, environment: Environment, active: Type.Boolean() };

export const PartnerBody = Type.Object({ ...partnerFields, rateLimits: RateLimitsOrDefault, createdAt: Type.String({ format: 'date-time' }) });

export const CreatedPartnerBody = Type.Object({ ...partnerFields, apiKey: Type.String({ description: 'Shown only once' }) });

export const RotatedKeyBody = Type.Object({
  apiKey: Type.String(),
  previousKeysExpireAt: Type.String({ format: 'date-time' }),
});
