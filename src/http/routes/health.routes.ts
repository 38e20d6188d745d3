import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { StringEnum } from '../../schemas/common.schema.js';

/** Exported for the OpenAPI document's named components. */
export const Live = Type.Object({ status: Type.String(), timestamp: Type.String({ format: 'date-time' }) });
export const Ready = Type.Object({
  status: Type.String(),
  db: Type.String(),
  timestamp: Type.String({ format: 'date-time' }),
  /** Background loops of this process that have completed no pass for 3 × their interval. */
  stalledWork: Type.Optional(Type.Array(Type.String())),
});
/** The 503 of readiness (the database is down, or the instance is shutting down): the readiness body, with an error answer's code and request id. */
export const NotReady = Type.Object({
  ...Ready.properties,
  code: StringEnum(['service_unavailable'] as const),
  requestId: Type.String({ description: 'The X-Request-Id of this answer' }),
});

export interface HealthOptions {
  /** Answers within its own deadline: readiness never waits on the request pool. */
  isDbReady: () => Promise<boolean>;
  stalledWork?: () => string[];
  /**
   * True once the process has been told to stop: readiness answers 503 while the listener still
   * serves, so a load balancer stops sending requests before the listener stops accepting them.
   */
  isDraining?: () => boolean;
}

export const healthRoutes: FastifyPluginAsyncTypebox<HealthOptions> = async (app, opts) => {
  app.get(
    '/health/live',
    { schema: { tags: ['Health'], summary: 'Liveness (no key needed)', security: [], response: { 200: Live } } },
    async () => ({ status: 'ok', timestamp: new Date().toISOString() }),
  );
  app.get(
    '/health/ready',
    { schema: { tags: ['Health'], summary: 'Readiness: database connectivity, and not shutting down (no key needed)', security: [], response: { 200: Ready, 503: NotReady } } },
    async (request, reply) => {
      const draining = opts.isDraining?.() ?? false;
      const ok = await opts.isDbReady();
      const stalled = opts.stalledWork?.() ?? [];
      const status = draining ? 'draining' : ok ? 'ok' : 'unavailable';
      const body = { status, db: ok ? 'ok' : 'down', timestamp: new Date().toISOString(), ...(stalled.length > 0 ? { stalledWork: stalled } : {}) };
      if (ok && !draining) return body;
      return reply.code(503).send({ ...body, code: 'service_unavailable' as const, requestId: request.id });
    },
  );
};
