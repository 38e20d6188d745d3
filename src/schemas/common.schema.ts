import { Type, type Static, type TSchema } from 'typebox';
import { ERROR_CODES } from '../domain/errors.js';

/*
 * Response shapes avoid anyOf: fast-json-stringify picks an anyOf branch by running an ajv
 * validation per branch on every response, while a type list or an enum costs a typeof check.
 */

/** `T | null` as `type: [T, 'null']`. */
export function Nullable<T extends TSchema & { type: string }>(schema: T, options: object = {}) {
  return Type.Unsafe<Static<T> | null>({ ...schema, ...options, type: [schema.type, 'null'] });
}

/** One of a fixed set of strings, as `type: string` with an `enum`. */
export function StringEnum<const T extends readonly string[]>(values: T, options: object = {}) {
  return Type.Unsafe<T[number]>({ ...options, type: 'string', enum: [...values] });
}

/** One of a fixed set of strings, as `anyOf` consts: request bodies whose violations name each choice. */
export function LiteralUnion<const T extends readonly string[]>(values: T, options: Record<string, unknown> = {}) {
  return Type.Unsafe<T[number]>(Type.Union(values.map((v) => Type.Literal(v)), options));
}

export const Uuid = Type.String({ format: 'uuid' });
export const IsoDateTime = Type.String({ format: 'date-time' });

export const IdParams = Type.Object({ id: Uuid }, { additionalProperties: false });

const ErrorCodeField = StringEnum(ERROR_CODES, { description: 'What went wrong, from one closed list: docs/errors.md says when to retry and what to tell the customer' });
const RequestIdField = Type.String({ description: 'The X-Request-Id of this answer: quote it when reporting a problem' });

export const BadRequestBody = Type.Object(
  {
    statusCode: Type.Literal(400),
    message: Type.Array(Type.String()),
    error: Type.Literal('Bad Request'),
    code: StringEnum(['invalid_request'] as const),
    requestId: RequestIdField,
    errors: Type.Array(
      Type.Object({
        path: Type.String({ description: "A JSON pointer to the refused field in the body, query, path or headers (`/amount`); '' for the request as a whole" }),
        message: Type.String(),
      }),
      { description: 'One entry per refused field' },
    ),
  },
  { description: 'One message entry and one errors entry per violation.' },
);

export const ErrorBody = Type.Object(
  {
    statusCode: Type.Integer(),
    message: Type.String(),
    error: Type.String(),
    code: ErrorCodeField,
    requestId: RequestIdField,
  },
);

/** Error responses every authenticated route can answer. */
export const commonErrors = {
  400: BadRequestBody,
  401: ErrorBody,
  403: ErrorBody,
  429: ErrorBody,
  500: ErrorBody,
  503: ErrorBody,
};

/** Errors of a route that reads a request body: too large (BODY_LIMIT_BYTES), or not JSON. */
export const bodyErrors = {
  413: ErrorBody,
  415: ErrorBody,
};
