import type { FastifyInstance, FastifyReply, FastifyRequest, onResponseHookHandler, RouteOptions } from 'fastify';
import type { Metrics } from '../../adapters/metrics.js';

type Labels = { method: string; route: string; status: string };

/**
 * Request count and latency per route template (never the raw URL, which would explode labels).
 * Each route gets its own hook with its template and label objects prepared at registration:
 * `request.routeOptions` builds a fresh object on every read, too dear for every request.
 */
export function registerHttpMetrics(app: FastifyInstance, metrics: Metrics): void {
  function recorder(route: string) {
    const labels = new Map<string, Labels>();
    return (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
      const key = `${request.method} ${reply.statusCode}`;
      let l = labels.get(key);
      if (!l) {
        l = { method: request.method, route, status: String(reply.statusCode) };
        labels.set(key, l);
      }
      metrics.httpRequests.inc(l);
      metrics.httpDuration.observe(l, reply.elapsedTime / 1000);
      done();
    };
  }

  app.addHook('onRoute', (route: RouteOptions) => {
    const own = recorder(route.url) as onResponseHookHandler;
    const existing = route.onResponse;
    route.onResponse = existing === undefined ? [own] : Array.isArray(existing) ? [...existing, own] : [existing, own];
  });

  // Requests that match no route never reach a route's hook.
  const unmatched = recorder('unmatched');
  app.addHook('onResponse', (request, reply, done) => (request.is404 ? unmatched(request, reply, done) : done()));
}

/** `GET /metrics` in Prometheus' text format; on the admin listener (loopback, or a private network), so no token is asked for. */
export function registerMetricsRoute(app: FastifyInstance, metrics: Metrics): void {
  app.get('/metrics', async (_request, reply) => {
    reply.type(metrics.registry.contentType);
    return metrics.registry.metrics();
  });
}
