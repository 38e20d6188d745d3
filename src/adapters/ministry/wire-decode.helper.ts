import { Type, type Static, type TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import type { Validator } from 'typebox/compile';
import type { JsonResponse } from './http-client.js';
import { UpstreamError } from '../../domain/ministry.port.js';
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
  if (validator.Check(body)) return storable(schema, body) as Static<T>;
  const [first] = validator.Errors(body);
  const detail = first ? `${first.instancePath || '/'} ${first.message}` : 'unexpected shape';
  throw new UpstreamError(source, 'malformed', `${what}: ${detail}`);
}

/**
 * PostgreSQL text cannot hold U+0000, nor UTF-8 an unpaired surrogate; either in a ministry's
 * answer would fail the write that stores it. Both become U+FFFD, as a text viewer shows them.
 */
const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

const storableText = (text: string): string => text.replaceAll('\u0000', '\ufffd').replace(UNPAIRED_SURROGATE, '\ufffd');

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A copy of a checked answer holding only what the wire schema names, its text storable. Members
 * the schema does not name are left behind unread: however many keys, however long or deeply
 * nested, they cost neither a copy nor a walk (the checks never look at them either).
 */
function storable(schema: TSchema, value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (Type.IsUnion(schema)) {
    // The value passed the whole schema, so one variant takes it: the first, as the check tried them.
    const variant = schema.anyOf.find((candidate) => validatorOf(candidate).Check(value));
    return variant ? storable(variant, value) : value;
  }
  if (Type.IsArray(schema) && Array.isArray(value)) return value.map((item) => storable(schema.items, item));
  if (Type.IsObject(schema) && isRecord(value)) {
    const kept: Record<string, unknown> = {};
    for (const [key, member] of Object.entries(schema.properties)) {
      if (Object.hasOwn(value, key)) kept[key] = storable(member, value[key]);
    }
    return kept;
  }
  // Numbers, booleans, null and literals are themselves; a kind no wire schema uses yet is copied whole.
  return typeof value === 'object' && value !== null ? storableTree(value) : value;
}

/** Every member, text made storable: for a schema kind that names no members (none of the wire schemas today). */
function storableTree(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (Array.isArray(value)) return value.map(storableTree);
  if (isRecord(value)) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, storableTree(item)]));
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
