import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Config } from '../config/config.js';
import type { Deps } from './deps.factory.js';
import type { DrainSignal } from './shutdown.factory.js';
import { buildApp, API_PREFIX } from '../app.js';
import { buildAdminApp } from '../admin-app.js';
import { buildWorkerApp } from '../worker-app.js';
import { operatorsOf } from '../http/plugins/admin-auth.plugin.js';
import { openApiServers } from '../http/plugins/openapi.plugin.js';
import { listenerLimitsOf } from '../http/fastify-instance.js';
import type { SchemaCompilers } from '../http/schema-compilers.js';

export interface ListenerOptions {
  logger: FastifyBaseLogger;
  /** Shared by the apps of a process, so each schema compiles once (the test suite builds hundreds). */
  schemaCompilers?: SchemaCompilers;
  /** True once the process is shutting down: readiness answers 503 (HealthOptions.isDraining). */
  isDraining?: () => boolean;
}

/** The partner API and the operator's API of an `api` or `all` process, built from its dependencies. */
export async function buildServiceApps(config: Config, deps: Deps, opts: ListenerOptions): Promise<{ api: FastifyInstance; admin: FastifyInstance }> {
  const listenerLimits = listenerLimitsOf(config);
  const api = await buildApp({
    logger: opts.logger,
    bodyLimitBytes: config.bodyLimitBytes,
    listenerLimits,
    services: deps.services,
    isDbReady: deps.isDbReady,
    stalledWork: deps.stalledWork,
    isDraining: opts.isDraining,
    metrics: deps.metrics,
    openApiServers: openApiServers(config, API_PREFIX),
    trustProxy: config.trustProxy,
    requestActivity: deps.requestActivity,
    tracer: deps.tracer,
    schemaCompilers: opts.schemaCompilers,
  });
  const admin = await buildAdminApp({
    logger: opts.logger,
    operators: operatorsOf(config),
    allowedHosts: config.adminAllowedHosts,
    services: deps.admin,
    metrics: deps.metrics,
    listenerLimits,
    schemaCompilers: opts.schemaCompilers,
  });
  return { api, admin };
}

/**
 * While the process drains, every answer closes its connection (`Connection: close`), those in
 * flight when the drain begins included: a client that keeps connections open (a TCP load
 * balancer's, a partner's pool) opens its next one elsewhere, rather than finding this one closed
 * under its next request once the listener stops. Node's close() ends only the connections idle
 * at that moment; one kept alive past it would hold the close open until its keep-alive timeout.
 */
function closeConnectionsWhileDraining(server: Server, drain: DrainSignal): void {
  const open = new Set<{ req: IncomingMessage; res: ServerResponse }>();
  const closeAfter = ({ req, res }: { req: IncomingMessage; res: ServerResponse }) => {
    if (!res.headersSent) res.shouldKeepAlive = false;
    else res.once('finish', () => req.socket.end());
  };
  // On the server itself, ahead of Fastify's handler: a Fastify hook added here would not reach the routes its plugins registered.
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    if (drain.isDraining()) {
      res.shouldKeepAlive = false;
      return;
    }
    const exchange = { req, res };
    open.add(exchange);
    res.once('close', () => open.delete(exchange));
  });
  drain.onBegin(() => {
    for (const exchange of open) closeAfter(exchange);
  });
}

export interface Listener {
  app: FastifyInstance;
  host: string;
  port: number;
}

const NEVER_DRAINS: DrainSignal = { isDraining: () => false, onBegin: () => undefined };

/** The listeners this process's role serves: the partner API and the operator's, or a worker's health and metrics. */
export async function buildListeners(config: Config, deps: Deps, logger: FastifyBaseLogger, opts: { drain?: DrainSignal } = {}): Promise<Listener[]> {
  const adminAt = { host: config.adminHost, port: config.adminPort };
  const drain = opts.drain ?? NEVER_DRAINS;
  let listeners: Listener[];
  if (config.processRole === 'worker') {
    const worker = await buildWorkerApp({ logger, allowedHosts: config.adminAllowedHosts, isDbReady: deps.isDbReady, stalledWork: deps.stalledWork, isDraining: drain.isDraining, metrics: deps.metrics, listenerLimits: listenerLimitsOf(config) });
    listeners = [{ app: worker, ...adminAt }];
  } else {
    const { api, admin } = await buildServiceApps(config, deps, { logger, isDraining: drain.isDraining });
    listeners = [
      { app: api, host: config.host, port: config.port },
      { app: admin, ...adminAt },
    ];
  }
  for (const l of listeners) closeConnectionsWhileDraining(l.app.server, drain);
  return listeners;
}
