import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Modules that reach outside the process: the domain never imports them. */
const IO_MODULES = [
  'node:fs', 'node:fs/promises', 'node:net', 'node:http', 'node:https', 'node:http2', 'node:dns', 'node:dgram', 'node:child_process', 'node:worker_threads',
  'fs', 'fs/promises', 'net', 'http', 'https', 'dns', 'child_process',
  'pg', 'ioredis', 'undici', 'kysely', '@electric-sql/pglite', 'kysely-pglite-dialect', 'fastify', 'pino', 'prom-client',
];

const upward = (folder) => [`../${folder}/*`, `../${folder}/**`, `../../${folder}/*`, `../../${folder}/**`, `../../../${folder}/**`];

/**
 * The layering rule (docs/architecture.md): http -> services -> domain, with services calling
 * repositories and adapters through their types. Nothing below http/ imports from it; the domain
 * imports only the domain and does no I/O; services never talk to a driver themselves.
 */
const layer = (message, folders, modules = []) => ({
  'no-restricted-imports': [
    'error',
    {
      paths: modules.map((name) => ({ name, message })),
      patterns: [{ group: folders.flatMap(upward), message }],
    },
  ],
});

export const LAYER_RULES = [
  {
    files: ['src/domain/**/*.ts'],
    rules: {
      ...layer('the domain holds rules only: no I/O and no imports from other layers', ['http', 'services', 'db', 'adapters', 'jobs', 'schemas', 'bin'], IO_MODULES),
      'no-restricted-globals': ['error', { name: 'fetch', message: 'the domain does no I/O' }, { name: 'process', message: 'configuration arrives through config.ts' }],
    },
  },
  {
    files: ['src/services/**/*.ts'],
    rules: {
      ...layer('services hold use cases: HTTP stays in http/, drivers in db/ and adapters/', ['http', 'bin'], IO_MODULES),
      'no-restricted-globals': ['error', { name: 'fetch', message: 'call an adapter in src/adapters' }, { name: 'process', message: 'configuration arrives through config.ts' }],
    },
  },
  {
    files: ['src/db/**/*.ts', 'src/adapters/**/*.ts', 'src/jobs/**/*.ts', 'src/schemas/**/*.ts'],
    rules: layer('nothing below http/ imports from it', ['http', 'bin']),
  },
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.data/**', 'sdk/dist/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/ban-ts-comment': 'error',
      'no-console': 'off',
    },
  },
  ...LAYER_RULES,
);
