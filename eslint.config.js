import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Modules that reach outside the process: the domain never imports them. */
const IO_MODULES = [
  'node:fs', 'node:fs/promises', 'node:net', 'node:http', 'node:https', 'node:http2', 'node:dns', 'node:dgram', 'node:child_process', 'node:worker_threads',
  'fs', 'fs/promises', 'net', 'http', 'https', 'dns', 'child_process',
  'pg', 'ioredis', 'undici', 'kysely', '@electric-sql/pglite', 'kysely-pglite-dialect', 'fastify', 'pino', 'prom-client',
];

/** The browser-side TypeScript: bundled per page by src/http/page-script.bundler.ts. */
export const PAGE_SCRIPTS = ['src/http/page-ui/**/*.ts', 'src/http/console/**/*.ts', 'src/http/sandbox/**/*.ts', 'src/http/short-link/**/*.ts'];

const upward = (folder) => [`../${folder}/*`, `../${folder}/**`, `../../${folder}/*`, `../../${folder}/**`, `../../../${folder}/**`];

/**
 * The layering rule (docs/architecture.md): http -> services -> domain, with services calling
 * repositories and adapters through their types. Nothing below http/ imports from it; the domain
 * imports only the domain and the codecs and does no I/O; services never talk to a driver
 * themselves; a codec imports no other part of the service.
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
    // The payment machine is domain: its rules, no I/O.
    files: ['src/domain/**/*.ts', 'src/payments/*.machine.ts'],
    rules: {
      ...layer('the domain holds rules only: no I/O and no imports from other layers', ['http', 'services', 'db', 'adapters', 'jobs', 'schemas', 'bin'], IO_MODULES),
      'no-restricted-globals': ['error', { name: 'fetch', message: 'the domain does no I/O' }, { name: 'process', message: 'configuration arrives through config.ts' }],
    },
  },
  {
    // A codec writes a published format (PNG, deflate, CRC, the QR symbol) and knows nothing of
    // payments: any layer may use one, and it uses no layer of the service, only other codecs,
    // node built-ins and libraries.
    files: ['src/codecs/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: IO_MODULES.map((name) => ({ name, message: 'a codec does no I/O' })),
          patterns: [{ group: ['../*', '../**'], message: 'a codec writes a format, not a rule: it imports nothing of the service but other codecs' }],
        },
      ],
      'no-restricted-globals': ['error', { name: 'fetch', message: 'a codec does no I/O' }, { name: 'process', message: 'a codec takes its options as arguments' }],
    },
  },
  {
    // A primitive knows nothing of the service: any folder may use one, and it uses none.
    files: ['src/primitives/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['../*', '../**'], message: 'a primitive imports nothing of the service' }] }] },
  },
  {
    files: ['src/work/**/*.ts'],
    rules: layer('leased work runs any work: it imports none of the use cases', ['http', 'bin', 'jobs', 'services', 'payments', 'composition']),
  },
  {
    files: ['src/config/**/*.ts'],
    rules: layer('the configuration sits below every use of it', ['http', 'bin', 'jobs', 'services', 'payments', 'work', 'adapters', 'db', 'schemas', 'composition']),
  },
  {
    files: ['src/services/**/*.ts', 'src/payments/*.service.ts'],
    rules: {
      ...layer('services hold use cases: HTTP stays in http/, drivers in db/ and adapters/', ['http', 'bin'], IO_MODULES),
      'no-restricted-globals': ['error', { name: 'fetch', message: 'call an adapter in src/adapters' }, { name: 'process', message: 'configuration arrives through config.ts' }],
    },
  },
  {
    files: ['src/db/**/*.ts', 'src/adapters/**/*.ts', 'src/jobs/**/*.ts', 'src/schemas/**/*.ts', 'src/payments/**/*.ts'],
    rules: layer('nothing below http/ imports from it', ['http', 'bin']),
  },
  {
    // A service hands repositories an opaque UnitOfWork; only src/db turns it into a transaction.
    files: ['src/services/**/*.ts', 'src/jobs/**/*.ts', 'src/payments/*.service.ts', 'src/payments/*.job.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: upward('db'),
              importNames: ['Trx', 'trxOf', 'asUnitOfWork'],
              message: 'services and jobs pass a UnitOfWork to repositories; the transaction itself stays in src/db',
            },
          ],
        },
      ],
    },
  },
  {
    // The pages' scripts run in the browser (tsconfig.pages.json): the domain's rules and the
    // schemas' types, nothing that needs the server; a schema is imported for its type only.
    files: PAGE_SCRIPTS,
    rules: {
      'no-restricted-imports': 'off',
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            ...IO_MODULES.map((name) => ({ name, message: 'a page script runs in the browser' })),
            { name: 'typebox', allowTypeImports: true, message: 'a page takes only types from TypeBox' },
          ],
          patterns: [
            { group: ['node:*', ...['services', 'db', 'adapters', 'jobs', 'bin', 'routes', 'plugins', 'codecs'].flatMap(upward)], message: 'a page script runs in the browser: only the domain, the schemas (types) and page-ui' },
            { group: upward('schemas'), allowTypeImports: true, message: 'a page takes only types from the schemas: their TypeBox values belong to the server' },
          ],
        },
      ],
      'no-restricted-globals': ['error', { name: 'process', message: 'a page script runs in the browser' }],
    },
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
  {
    // Its paths, not its length, make a function hard to follow (docs/architecture.md): a long
    // straight run of statements stays one function, and one past this many paths is split where
    // its responsibilities part.
    files: ['src/**/*.ts', 'sdk/src/**/*.ts', 'simulator/**/*.ts'],
    rules: { complexity: ['error', 40] },
  },
  ...LAYER_RULES,
);
