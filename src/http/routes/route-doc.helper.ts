import type { FastifySchema } from 'fastify';

/**
 * A route's options from its OpenAPI tag, summary and schemas: `documented('Webhooks')` gives
 * the function each route of that tag calls.
 */
export function documented(tag: string) {
  return <S extends FastifySchema>(summary: string, schema: S) => ({ schema: { tags: [tag], summary, ...schema } });
}
