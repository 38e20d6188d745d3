import type { FastifyInstance } from 'fastify';

/** Told when a request begins; what it returns is called once the request is over. */
export interface RequestActivity {
  requestStarted(): () => void;
}

/**
 * Counts the requests being served, from their first hook until their response closes (sent,
 * failed or its client gone: Node emits `close` on every one, injected ones included), so
 * background work on the embedded database can wait for the time between them.
 */
export function registerRequestActivity(app: FastifyInstance, activity: RequestActivity): void {
  app.addHook('onRequest', (_req, reply, done) => {
    reply.raw.once('close', activity.requestStarted());
    done();
  });
}
