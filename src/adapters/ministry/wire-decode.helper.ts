import type { Static, TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import type { Validator } from 'typebox/compile';
import type { JsonResponse } from './http-client.js';
import { UpstreamError } from './ministry.types.js';
import type { Source } from '../../domain/vocabulary.js';
import { WireValueError } from './wire-value.error.js';
import { AmountError } from '../../domain/money.js';

const validators = new WeakMap<TSchema, Validator>();

/** Wire schemas are checked on every upstream answer, so each is compiled once, on first use. */
function validatorOf(schema: TSchema): Validator {
  let validator = validators.get(schema);
  if (!validator) {
    validator = Compile(schema);
    validators.set(schema, validator);
  }
  return validator;
}

/** Checks an upstream body against the source's wire schema; a mismatch is a malformed answer. */
export function decodeBody<T extends TSchema>(source: Source, schema: T, body: unknown, what: string): Static<T> {
  const validator = validatorOf(schema);
  if (validator.Check(body)) return storable(body) as Static<T>;
  const [first] = validator.Errors(body);
  const detail = first ? `${first.instancePath || '/'} ${first.message}` : 'unexpected shape';
  throw new UpstreamError(source, 'malformed', `${what}: ${detail}`);
}

/**
 * PostgreSQL text cannot hold U+0000, nor UTF-8 an unpaired surrogate; either in a ministry's
 * answer would fail the write that stores it. Both become U+FFFD, as a text viewer shows them.
 */
const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

function storable(value: unknown): unknown {
  if (typeof value === 'string') return value.replaceAll('\u0000', '\ufffd').replace(UNPAIRED_SURROGATE, '\ufffd');
  if (Array.isArray(value)) return value.map(storable);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, storable(item)]));
  }
  return value;
}

/** Runs value mapping (amounts, dates) and reports a bad value as a malformed answer. */
export function mapWire<R>(source: Source, what: string, map: () => R): R {
  try {
    return map();
  } catch (error) {
    if (error instanceof WireValueError || error instanceof AmountError) {
      throw new UpstreamError(source, 'malformed', `${what}: ${error.message}`, { cause: error });
    }
    throw error;
  }
}

/**
 * True when the ministry itself says "not found". A 404 without the source's own error body
 * (a wrong base URL, a proxy) is an http failure, so it never reads as an unknown payment.
 */
export function isMinistryNotFound(source: Source, schema: TSchema, response: JsonResponse, what: string): boolean {
  if (response.status !== 404) return false;
  if (validatorOf(schema).Check(response.body)) return true;
  throw new UpstreamError(source, 'http', `${what}: HTTP 404 without the ministry's not-found body`);
}
