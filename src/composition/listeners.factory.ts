import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Config } from '../config/config.js';
import type { Deps } from './deps.factory.js';
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

/** The listeners this process's role serves: the partner API and the operator's, or a worker's health and metrics. */
export async function buildListeners(config: Config, deps: Deps, logger: FastifyBaseLogger): Promise<{ app: FastifyInstance; host: string; port: number }[]> {
  const adminAt = { host: config.adminHost, port: config.adminPort };
  if (config.processRole === 'worker') {
    const worker = await buildWorkerApp({ logger, allowedHosts: config.adminAllowedHosts, isDbReady: deps.isDbReady, stalledWork: deps.stalledWork, metrics: deps.metrics, listenerLimits: listenerLimitsOf(config) });
    return [{ app: worker, ...adminAt }];
  }
  const { api, admin } = await buildServiceApps(config, deps, { logger });
  return [
    { app: api, host: config.host, port: config.port },
    { app: admin, ...adminAt },
  ];
}
