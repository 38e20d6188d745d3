import Fastify, { type FastifyBaseLogger, type FastifyServerOptions } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Config } from '../config/config.js';
import { frameworkErrors, registerErrorHandling } from './plugins/errors.plugin.js';
import { clientErrorHandler } from './client-error.handler.js';
import { genReqId, registerRequestId } from './plugins/request-id.plugin.js';
import { createSchemaCompilers, type SchemaCompilers } from './schema-compilers.js';

/** What one listener grants its clients: how long a request may take to arrive, and how many connections it holds. */
export interface ListenerLimits {
  requestTimeoutMs: number;
  maxConnections: number;
}

/** REQUEST_TIMEOUT_MS and MAX_CONNECTIONS_PER_LISTENER, for each listener of the process. */
export function listenerLimitsOf(config: Pick<Config, 'requestTimeoutMs' | 'maxConnectionsPerListener'>): ListenerLimits {
  return { requestTimeoutMs: config.requestTimeoutMs, maxConnections: config.maxConnectionsPerListener };
}

/**
 * Node's own defaults let a request take forever (Fastify's requestTimeout 0 turns Node's off),
 * allow 60 s for headers whatever the request's deadline, and look for late requests only every
 * 30 s, so a cut came up to 30 s past its deadline. Timed-out requests reach clientErrorHandler
 * (ERR_HTTP_REQUEST_TIMEOUT), which answers 408 and closes the connection.
 */
function deadlineOptions(limits: ListenerLimits) {
  return {
    requestTimeout: limits.requestTimeoutMs,
    http: {
      headersTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, Math.ceil(limits.requestTimeoutMs / 4)),
    },
  };
}

/**
 * A Fastify instance with what both listeners share: request ids, schema validation in the
 * service's words, one error mapping, including for errors raised before routing, and the
 * listener's limits. Without limits Node's defaults stay: only for apps driven by inject(), which
 * never listen.
 */
export function createFastify(
  logger: FastifyBaseLogger,
  options: Pick<FastifyServerOptions, 'bodyLimit' | 'childLoggerFactory' | 'routerOptions' | 'trustProxy'> & { limits?: ListenerLimits },
  compilers: SchemaCompilers = createSchemaCompilers(),
) {
  const { limits, ...fastifyOptions } = options;
  const app = Fastify({
    loggerInstance: logger,
    genReqId,
    frameworkErrors,
    clientErrorHandler,
    ...(limits ? deadlineOptions(limits) : {}),
    ...fastifyOptions,
  }).withTypeProvider<TypeBoxTypeProvider>();
  // Past it Node closes each new connection as it is accepted, before it costs a parser.
  if (limits) app.server.maxConnections = limits.maxConnections;
  app.setValidatorCompiler(compilers.validator);
  app.setSerializerCompiler(compilers.serializer);
  registerRequestId(app);
  registerErrorHandling(app);
  return app;
}
