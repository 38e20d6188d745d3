// Build helper for `npm run build` (plain Node, no dependencies).
//   clean: remove dist/ so no stale modules survive a rename.
//   copy:  put the files read at runtime next to the compiled code, mirroring the source tree.
//          The code finds them with `new URL('../../config/banks.json', import.meta.url)` and
//          the like, so dist/src/services/*.js finds dist/config/, dist/simulator/*.js finds
//          dist/simulator/fixtures/, dist/src/http/routes/*.js finds dist/src/http/sandbox/.
//          Every non-TypeScript file under src/ and simulator/ is copied, plus config/.
import { cpSync, existsSync, rmSync, statSync } from 'node:fs';
import process from 'node:process';
import { URL, fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = `${root}dist/`;
const TREES = ['config', 'src', 'simulator'];

const step = process.argv[2];
if (step === 'clean') {
  rmSync(dist, { recursive: true, force: true });
} else if (step === 'copy') {
  for (const dir of TREES) {
    if (!existsSync(`${root}${dir}`)) continue;
    cpSync(`${root}${dir}`, `${dist}${dir}`, {
      recursive: true,
      // Directories pass so cpSync descends; of the files, only what tsc does not emit.
      filter: (src) => statSync(src).isDirectory() || !/\.(ts|tsx|mts|cts)$/.test(src),
    });
  }
} else {
  throw new Error(`usage: node scripts/build-assets.mjs clean|copy (got ${String(step)})`);
}
