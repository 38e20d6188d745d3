import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { UNRESOLVED_STATUSES } from '../payments/payment.machine.js';

/*
 * The pages' scripts are TypeScript modules (console/console.page.ts, sandbox/sandbox.page.ts,
 * short-link/short-link.page.ts) bundled by esbuild into one classic script each, which the
 * console and the sandbox load as a file and the QR landing page carries inline (one request
 * fewer on a phone). `npm run build` bundles them ahead into dist/ (scripts/bundle-pages.ts),
 * where the compiled service reads them; run from source (`npm start`, the tests) there is no
 * bundle next to this module, so the first request for a page bundles its script in memory, once
 * per process. esbuild is loaded only then: the production image, which has no dev dependencies,
 * never needs it.
 */

export const PAGE_NAMES = ['console', 'sandbox', 'short-link'] as const;
export type PageName = (typeof PAGE_NAMES)[number];

/**
 * The server's constants a page's script names without importing them, written into its bundle as
 * literals: the module that holds them would bring a public page far more than it needs (the
 * payment machine's whole table, and its names for what partners do).
 */
const PAGE_CONSTANTS: { readonly [page in PageName]?: Readonly<Record<string, unknown>> } = {
  'short-link': { UNRESOLVED_STATUSES },
};

export interface PageScript {
  code: string;
  /** Subresource integrity of `code`, for the page's script tag. */
  integrity: string;
  /** Changes with the code, so a browser never runs an older bundle under a newer page. */
  version: string;
}

/** Where the build puts a page's bundle, next to the compiled routes (dist/src/http/<name>/<name>.page.js). */
export const bundledFile = (name: PageName): URL => new URL(`./${name}/${name}.page.js`, import.meta.url);
const sourceFile = (name: PageName): URL => new URL(`./${name}/${name}.page.ts`, import.meta.url);

/** Bundles a page's TypeScript entry into one self-contained script (no imports, nothing from other hosts). */
export async function bundlePageScript(name: PageName): Promise<string> {
  const { build } = await import('esbuild');
  const result = await build({
    entryPoints: [fileURLToPath(sourceFile(name))],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    target: ['es2022'],
    charset: 'utf8',
    minify: true,
    legalComments: 'none',
    logLevel: 'silent',
    define: Object.fromEntries(Object.entries(PAGE_CONSTANTS[name] ?? {}).map(([constant, value]) => [constant, JSON.stringify(value)])),
  });
  const output = result.outputFiles[0];
  if (!output) throw new Error(`esbuild produced no bundle for the ${name} page`);
  return output.text;
}

function described(code: string): PageScript {
  const digest = createHash('sha256').update(code, 'utf8').digest();
  return { code, integrity: `sha256-${digest.toString('base64')}`, version: digest.toString('hex').slice(0, 12) };
}

async function load(name: PageName): Promise<PageScript> {
  const built = bundledFile(name);
  return described(existsSync(built) ? readFileSync(built, 'utf8') : await bundlePageScript(name));
}

const loaded = new Map<PageName, Promise<PageScript>>();

/** The page's script, bundled or read once per process; a failed bundle is tried again on the next request. */
export function pageScript(name: PageName): Promise<PageScript> {
  let script = loaded.get(name);
  if (!script) {
    script = load(name);
    loaded.set(name, script);
    script.catch(() => loaded.delete(name));
  }
  return script;
}
