import type { FastifyInstance, FastifyRequest } from 'fastify';

/** Told when a request begins; what it returns is called once the request is over. */
export interface RequestActivity {
  requestStarted(): () => void;
}

/**
 * Counts the requests being served, from their first hook until their answer is sent or their
 * client gone (whichever comes first; the count's own guard makes the second a no-op), so
 * background work on the embedded database can wait for the time between them.
 */
export function registerRequestActivity(app: FastifyInstance, activity: RequestActivity): void {
  const ends = new WeakMap<FastifyRequest, () => void>();
  const end = (req: FastifyRequest) => ends.get(req)?.();
  app.addHook('onRequest', (req, reply, done) => {
    const ended = activity.requestStarted();
    ends.set(req, ended);
    reply.raw.once('close', ended);
    done();
  });
  app.addHook('onResponse', (req, _reply, done) => {
    end(req);
    done();
  });
  app.addHook('onRequestAbort', (req, done) => {
    end(req);
    done();
  });
}
