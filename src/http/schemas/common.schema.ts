import { Type } from 'typebox';

export const Uuid = Type.String({ format: 'uuid' });
export const IsoDateTime = Type.String({ format: 'date-time' });

export const IdParams = Type.Object({ id: Uuid }, { additionalProperties: false });

export const BadRequestBody = Type.Object(
  {
    statusCode: Type.Literal(400),
    message: Type.Array(Type.String()),
    error: Type.Literal('Bad Request'),
  },
  { description: 'One message entry per violation.' },
);

export const ErrorBody = Type.Object(
  {
    statusCode: Type.Integer(),
    message: Type.String(),
    error: Type.String(),
  },
);

export const ApiKeyHeaders = Type.Object({
  'x-api-key': Type.Optional(Type.String({ description: 'Partner API key' })),
});

/** Error responses every authenticated route can answer. */
export const commonErrors = {
  400: BadRequestBody,
  401: ErrorBody,
  403: ErrorBody,
  429: ErrorBody,
  500: ErrorBody,
  503: ErrorBody,
};
