// Build step of `npm run build`, after tsc and the copy (run with tsx): bundles each page's script
// to dist/src/http/<name>/<name>.page.js, where the compiled page-script.bundler.js looks first.
import { mkdirSync, writeFileSync } from 'node:fs';
import { PAGE_NAMES, bundlePageScript } from '../src/http/page-script.bundler.js';

for (const name of PAGE_NAMES) {
  const folder = new URL(`../dist/src/http/${name}/`, import.meta.url);
  mkdirSync(folder, { recursive: true });
  writeFileSync(new URL(`${name}.page.js`, folder), await bundlePageScript(name));
}
