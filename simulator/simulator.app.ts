import Fastify, { type FastifyInstance } from 'fastify';
import type { FixtureFile } from './fixtures.schema.js';
import { oversizeAnswerHook } from './fault.hook.js';
import { controlRoutes } from './routes/control.routes.js';
import { etaxRoutes } from './routes/etax.routes.js';
import { mofRoutes } from './routes/mof.routes.js';
import { policeRoutes } from './routes/police.routes.js';
import { SimulatorState } from './simulator.state.js';

export interface SimulatorOptions {
  fixtures: FixtureFile;
  /** Delay before a submitted payment is approved on its own; 0 = only via the control API. */
  autoApproveMs: number;
  /** pino level of the request log; no log when unset. */
  logLevel?: string;
}

/** Builds the simulated ministry systems; the caller decides whether and where to listen. */
/** Ministry calls whose trace headers the simulator keeps. */
const TRACE_HEADERS_KEPT = 1000;

export async function buildSimulator(opts: SimulatorOptions): Promise<FastifyInstance> {
  // Held "timeout" requests must not delay close, so open connections are cut on close.
  const app = Fastify({ logger: opts.logLevel ? { level: opts.logLevel } : false, forceCloseConnections: true });
  const state = new SimulatorState(opts.fixtures, opts.autoApproveMs);
  const closing = new AbortController();

  app.addHook('preClose', async () => closing.abort());
  app.addHook('onClose', async () => state.dispose());
  // A callback hook: every ministry call runs it and it never waits.
  app.addHook('onRequest', (request, _reply, done) => {
    const route = request.routeOptions.url;
    if (route !== undefined && !route.startsWith('/__control')) {
      const header = (name: string) => (typeof request.headers[name] === 'string' ? (request.headers[name] as string) : null);
      state.traceHeaders.push({ route: `${request.method} ${route}`, traceparent: header('traceparent'), tracestate: header('tracestate') });
      if (state.traceHeaders.length > TRACE_HEADERS_KEPT) state.traceHeaders.shift();
    }
    done();
  });

  // On the root, so the answers of every source's routes pass it; only requests its fault hook marked are padded.
  app.addHook('onSend', oversizeAnswerHook());

  const routeOptions = { state, closing: closing.signal };
  await app.register(mofRoutes, { ...routeOptions, prefix: '/mof' });
  await app.register(etaxRoutes, { ...routeOptions, prefix: '/etax' });
  await app.register(policeRoutes, { ...routeOptions, prefix: '/police' });
  await app.register(controlRoutes, { ...routeOptions, prefix: '/__control' });
  return app;
}
