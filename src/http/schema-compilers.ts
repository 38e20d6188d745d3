import fastJson from 'fast-json-stringify';
import type { FastifySchemaCompiler, FastifySerializerCompiler } from 'fastify';
import { createValidatorCompiler } from './validation.js';

/** How an app compiles its routes' schemas: requests are checked with `validator`, answers written with `serializer`. */
export interface SchemaCompilers {
  validator: FastifySchemaCompiler<unknown>;
  serializer: FastifySerializerCompiler<unknown>;
}

/**
 * Answers' serializers by schema object, as Fastify's own compiler builds them (no shared schemas
 * are added to the apps): a schema many routes answer with, as the error bodies are, is compiled
 * once instead of once a route and status.
 */
function createSerializerCompiler(): FastifySerializerCompiler<unknown> {
  const compiled = new WeakMap<object, (data: unknown) => string>();
  return ({ schema }) => {
    const key = schema as object;
    let serialize = compiled.get(key);
    if (!serialize) {
      serialize = fastJson(key) as (data: unknown) => string;
      compiled.set(key, serialize);
    }
    return serialize;
  };
}

/**
 * Both compilers; apps built with the same ones compile each schema once between them (the test
 * suite builds hundreds of apps in a worker).
 */
export function createSchemaCompilers(): SchemaCompilers {
  return { validator: createValidatorCompiler(), serializer: createSerializerCompiler() };
}
