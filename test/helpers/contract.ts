import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { FastifyInstance } from 'fastify';
import { API_PREFIX } from '../../src/app.js';

/*
 * The contract test: every answer of a documented operation is checked against the OpenAPI
 * document the service serves — the status must be documented for that operation, the body must
 * match its schema, the required headers must be there. test-context.ts attaches it to every
 * context's app, so each integration test is also a contract test.
 */

interface HeaderObject {
  required?: boolean;
  $ref?: string;
}
interface ResponseObject {
  headers?: Record<string, HeaderObject>;
  content?: Record<string, { schema?: unknown }>;
}
export interface ContractDocument {
  paths?: Record<string, Record<string, { responses?: Record<string, ResponseObject> }>>;
  components?: { schemas?: Record<string, unknown>; headers?: Record<string, HeaderObject> };
}

export interface ObservedResponse {
  method: string;
  /** The route as Fastify declares it, e.g. `/api/v1/payments/:id`. */
  route: string;
  statusCode: number;
  headers: Record<string, unknown>;
  body: string;
}

const SCHEMA_REF = '#/components/schemas/';
const SCHEMA_URI = 'https://contract.test/schemas/';

/** The document's `#/components/schemas/X` refs as URIs ajv knows the components under. */
function absoluteRefs(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(absoluteRefs);
  if (schema === null || typeof schema !== 'object') return schema;
  return Object.fromEntries(
    Object.entries(schema).map(([key, value]) => [
      key,
      key === '$ref' && typeof value === 'string' && value.startsWith(SCHEMA_REF) ? SCHEMA_URI + value.slice(SCHEMA_REF.length) : absoluteRefs(value),
    ]),
  );
}

/** `/api/v1/payments/:id` -> `/payments/{id}`, the document's path (relative to its servers). */
export function documentPath(route: string, prefix = API_PREFIX): string {
  const path = route.startsWith(`${prefix}/`) ? route.slice(prefix.length) : route;
  return path.replace(/:(\w+)/g, '{$1}').replace(/(.)\/$/, '$1');
}

export interface ContractChecker {
  /** The ways `res` breaks the document; [] when it conforms, null when it is no documented operation. */
  check(res: ObservedResponse): string[] | null;
  /** A validator of the schema at `#/components/schemas/{name}` (or any schema using those refs). */
  validator(schema: unknown): ValidateFunction;
}

export function createContractChecker(doc: ContractDocument): ContractChecker {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  for (const [name, schema] of Object.entries(doc.components?.schemas ?? {})) ajv.addSchema(absoluteRefs(schema) as object, SCHEMA_URI + name);
  const compiled = new Map<unknown, ValidateFunction>();
  const validator = (schema: unknown) => {
    let fn = compiled.get(schema);
    if (!fn) {
      fn = ajv.compile(absoluteRefs(schema) as object);
      compiled.set(schema, fn);
    }
    return fn;
  };
  const headerObject = (h: HeaderObject) => (h.$ref ? doc.components?.headers?.[h.$ref.replace('#/components/headers/', '')] : h);

  return {
    validator,
    check(res) {
      const path = documentPath(res.route);
      const operation = doc.paths?.[path]?.[res.method.toLowerCase()];
      if (!operation) return null;
      const where = `${res.method} ${path} -> ${res.statusCode}`;
      const status = String(res.statusCode);
      const responses = operation.responses ?? {};
      const documented = responses[status] ?? responses[`${status[0]}XX`] ?? responses.default;
      if (!documented) return [`${where}: status not documented (documented: ${Object.keys(responses).join(', ')}); body ${res.body.slice(0, 300)}`];
      const problems: string[] = [];
      for (const [name, h] of Object.entries(documented.headers ?? {})) {
        if (headerObject(h)?.required && res.headers[name.toLowerCase()] === undefined) problems.push(`${where}: required header ${name} missing`);
      }
      const media = documented.content?.['application/json'];
      if (!media) {
        if (res.body.length > 0) problems.push(`${where}: a body where the document has none`);
        return problems;
      }
      const contentType = String(res.headers['content-type'] ?? '');
      if (!contentType.startsWith('application/json')) problems.push(`${where}: content-type ${contentType}, documented application/json`);
      let body: unknown;
      try {
        body = JSON.parse(res.body);
      } catch {
        return [...problems, `${where}: body is not JSON: ${res.body.slice(0, 300)}`];
      }
      const validate = validator(media.schema);
      if (!validate(body)) {
        const errors = (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? ''}`).join('; ');
        problems.push(`${where}: body does not match the documented schema (${errors}): ${res.body.slice(0, 300)}`);
      }
      return problems;
    },
  };
}

export interface Contract {
  /** The problems of the response with this request id, removed from the pending ones. */
  take(requestId: unknown): string[];
  /** The problems no one has taken yet (then forgotten). */
  pending(): string[];
}

/**
 * Checks every response `app` sends for a documented operation against `app`'s own OpenAPI
 * document (read once, at the first response). It never changes a response: the problems are kept
 * by request id for the test context to raise.
 */
export function attachContract(app: FastifyInstance): Contract {
  let checker: ContractChecker | undefined;
  const problems = new Map<string, string[]>();
  app.addHook('onSend', async (request, reply, payload) => {
    const route = request.routeOptions.url;
    if (!route || route.endsWith('/openapi.json')) return payload;
    checker ??= createContractChecker(app.swagger() as ContractDocument);
    const body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : payload == null ? '' : undefined;
    if (body === undefined) return payload; // a stream: no partner operation answers with one
    const found = checker.check({ method: request.method, route, statusCode: reply.statusCode, headers: reply.getHeaders(), body });
    if (found && found.length > 0) problems.set(request.id, [...(problems.get(request.id) ?? []), ...found]);
    return payload;
  });
  return {
    take(requestId) {
      const id = String(requestId);
      const found = problems.get(id) ?? [];
      problems.delete(id);
      return found;
    },
    pending() {
      const all = [...problems.values()].flat();
      problems.clear();
      return all;
    },
  };
}
