import { Ajv, type ErrorObject, type Options } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { refuseUnstorableText } from './storable-text.validator.js';
import type { Violation } from '../domain/errors.js';

function createAjv(coerceTypes: Options['coerceTypes']): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    coerceTypes,
    removeAdditional: false,
    useDefaults: true,
    strict: false,
    verbose: true,
  });
  addFormats.default(ajv, ['uuid', 'date-time', 'date', 'uri', 'email']);
  return ajv;
}

/**
 * Bodies are validated strictly (a string "100" is not an amount); query strings and path
 * params are text on the wire, so numbers there are coerced. Every part a route's schema checks
 * (body, query, path, headers) also refuses text PostgreSQL cannot store, so no route needs to
 * remember to; parts without a schema are never read by the route.
 */
export function createValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const strict = createAjv(false);
  const coercing = createAjv('array');
  return ({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? strict : coercing;
    return refuseUnstorableText(ajv.compile(schema as object));
  };
}

const PART_LABEL: Record<string, string> = {
  body: 'property',
  querystring: 'query parameter',
  params: 'path parameter',
  headers: 'header',
};

function fieldName(err: ErrorObject, context: string): string {
  const path = err.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (path) return path;
  return context === 'body' ? 'body' : (PART_LABEL[context] ?? context);
}

/** One human-readable message per violation, in the style of the 400 body the partner guide shows. */
export function describeValidationError(err: ErrorObject, context: string): string {
  const label = PART_LABEL[context] ?? 'property';
  const field = fieldName(err, context);
  const prefix = field === 'body' ? '' : `${err.instancePath ? field + '.' : ''}`;
  const custom = (err.parentSchema as { 'x-violation'?: string } | undefined)?.['x-violation'];
  if (custom && ['minProperties', 'maxProperties', 'pattern'].includes(err.keyword)) return custom;
  switch (err.keyword) {
    case 'additionalProperties':
      return `${label} ${prefix}${String(err.params.additionalProperty)} should not exist`;
    case 'required':
      return `${label} ${prefix}${String(err.params.missingProperty)} is required`;
    case 'type':
      return `${field} must be of type ${String(err.params.type)}`;
    case 'format':
      return err.params.format === 'uuid' ? `${field} must be a UUID` : `${field} must be a valid ${String(err.params.format)}`;
    default:
      return `${field} ${err.message ?? 'is invalid'}`;
  }
}

/** The values a schema allows when it is a choice of literals (an enum, or TypeBox's union of literals as anyOf consts). */
function literalChoices(schema: unknown): unknown[] | null {
  if (!schema || typeof schema !== 'object') return null;
  const { enum: values, anyOf } = schema as { enum?: unknown; anyOf?: unknown };
  if (Array.isArray(values)) return values;
  if (!Array.isArray(anyOf) || anyOf.length === 0) return null;
  const choices: unknown[] = [];
  for (const branch of anyOf as unknown[]) {
    if (!branch || typeof branch !== 'object') return null;
    if ('const' in branch) choices.push((branch as { const: unknown }).const);
    else if ((branch as { type?: unknown }).type === 'null') choices.push(null);
    else return null;
  }
  return choices;
}

const choiceText = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

/** The JSON pointer of the field a violation refuses: the missing or unknown property itself, else the value's place. */
function pointerOf(err: ErrorObject): string {
  const escape = (name: string) => name.replace(/~/g, '~0').replace(/\//g, '~1');
  if (err.keyword === 'required') return `${err.instancePath}/${escape(String(err.params.missingProperty))}`;
  if (err.keyword === 'additionalProperties') return `${err.instancePath}/${escape(String(err.params.additionalProperty))}`;
  return err.instancePath;
}

/**
 * One violation per refused field, `path` a JSON pointer into the request part (`/amount`), with
 * the message the partner guide shows; the 400 body's `message` list and `errors` list both come from it.
 */
export function validationViolations(errors: ErrorObject[], context: string): Violation[] {
  // A choice of literals fails once per branch ("must be equal to constant") plus once as the
  // union: the union alone is reported, naming the values it allows.
  const choiceUnions = errors.filter((e) => e.keyword === 'anyOf' && literalChoices(e.parentSchema) !== null);
  const branchOfChoice = (e: ErrorObject) => choiceUnions.some((u) => u.instancePath === e.instancePath && e.schemaPath.startsWith(`${u.schemaPath}/`));
  const seen = new Set<string>();
  const out: Violation[] = [];
  for (const err of errors) {
    if (branchOfChoice(err)) continue;
    const choices = err.keyword === 'anyOf' || err.keyword === 'enum' ? literalChoices(err.parentSchema) : null;
    // Other unions report one error per branch plus a summary; the branches alone are clearer.
    if (!choices && (err.keyword === 'anyOf' || err.keyword === 'oneOf')) continue;
    const text = choices ? `${fieldName(err, context)} must be one of: ${choices.map(choiceText).join(', ')}` : describeValidationError(err, context);
    if (!seen.has(text)) {
      seen.add(text);
      out.push({ path: pointerOf(err), message: text });
    }
  }
  return out.length > 0 ? out : [{ path: '', message: 'request is invalid' }];
}

export function describeValidation(errors: ErrorObject[], context: string): string[] {
  return validationViolations(errors, context).map((v) => v.message);
}
