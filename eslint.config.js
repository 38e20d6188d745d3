import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Modules that reach outside the process: the domain never imports them. */
const IO_MODULES = [
  'node:fs', 'node:fs/promises', 'node:net', 'node:http', 'node:https', 'node:http2', 'node:dns', 'node:dgram', 'node:child_process', 'node:worker_threads',
  'fs', 'fs/promises', 'net', 'http', 'https', 'dns', 'child_process',
  'pg', 'ioredis', 'undici', 'kysely', '@electric-sql/pglite', 'kysely-pglite-dialect', 'fastify', 'pino', 'prom-client',
];

/** The browser-side TypeScript: bundled per page by src/http/page-script.bundler.ts. */
export const PAGE_SCRIPTS = ['src/http/page-ui/**/*.ts', 'src/http/console/**/*.ts', 'src/http/sandbox/**/*.ts'];

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
  {
    // A service hands repositories an opaque UnitOfWork; only src/db turns it into a transaction.
    files: ['src/services/**/*.ts', 'src/jobs/**/*.ts'],
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
            { group: ['node:*', ...['services', 'db', 'adapters', 'jobs', 'bin', 'routes', 'plugins'].flatMap(upward)], message: 'a page script runs in the browser: only the domain, the schemas (types) and page-ui' },
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
    // A function is read at once: a factory spreads smaller ones rather than growing past a screen.
    files: ['src/**/*.ts', 'sdk/src/**/*.ts', 'simulator/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 80, skipBlankLines: false, skipComments: false }] },
  },
  ...LAYER_RULES,
);
