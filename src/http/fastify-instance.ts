import Fastify, { type FastifyBaseLogger, type FastifyServerOptions } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { frameworkErrors, registerErrorHandling } from './plugins/errors.plugin.js';
import { clientErrorHandler } from './client-error.handler.js';
import { genReqId, registerRequestId } from './plugins/request-id.plugin.js';
import { createSchemaCompilers, type SchemaCompilers } from './schema-compilers.js';

/**
 * A Fastify instance with what both listeners share: request ids, schema validation in the
 * service's words, and one error mapping, including for errors raised before routing.
 */
export function createFastify(
  logger: FastifyBaseLogger,
  options: Pick<FastifyServerOptions, 'bodyLimit' | 'childLoggerFactory' | 'routerOptions' | 'trustProxy'>,
  compilers: SchemaCompilers = createSchemaCompilers(),
) {
  const app = Fastify({ loggerInstance: logger, genReqId, frameworkErrors, clientErrorHandler, ...options }).withTypeProvider<TypeBoxTypeProvider>();
  app.setValidatorCompiler(compilers.validator);
  app.setSerializerCompiler(compilers.serializer);
  registerRequestId(app);
  registerErrorHandling(app);
  return app;
}
