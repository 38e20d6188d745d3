import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/*
 * Every repository path the README and the docs name leads to a file or folder that exists, so a
 * file that moves takes its mentions along (a reader following `src/...` finds it).
 */

const ROOT = join(import.meta.dirname, '..', '..');
const TOP = ['src', 'test', 'docs', 'simulator', 'bench', 'scripts', 'config', 'sdk', 'deploy'];
/** A top folder's name starting a path: not in the middle of a word, a URL or another path (a `../` before it is fine). */
const PATH = new RegExp(`(?:^|[^\\w./-]|\\.\\./)((?:${TOP.join('|')})/[\\w./*{},-]*)`, 'g');

/** Written by a build, so absent from a clone (and gitignored). */
const BUILT = new Set(['sdk/dist']);

const documents = () => [
  'README.md',
  'sdk/README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** `a/{b,c}.ts` as `a/b.ts` and `a/c.ts`. */
function expand(path: string): string[] {
  const m = /\{([^{}]*)\}/.exec(path);
  if (!m) return [path];
  return m[1]!.split(',').flatMap((alt) => expand(path.slice(0, m.index) + alt + path.slice(m.index + m[0].length)));
}

/** A glob stands for what it names when the folder before its first `*` holds a match. */
function exists(path: string): boolean {
  const star = path.indexOf('*');
  if (star < 0) return existsSync(join(ROOT, path));
  const dir = path.slice(0, path.lastIndexOf('/', star));
  if (!existsSync(join(ROOT, dir))) return false;
  const rest = new RegExp(`^${path.slice(dir.length + 1).replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*+/g, '.*')}$`);
  return readdirSync(join(ROOT, dir), { recursive: true }).some((f) => rest.test(String(f).replaceAll('\\', '/')));
}

function pathsIn(file: string): { path: string; line: number }[] {
  const found: { path: string; line: number }[] = [];
  readFileSync(join(ROOT, file), 'utf8')
    .split('\n')
    .forEach((text, i) => {
      for (const m of text.matchAll(PATH)) {
        // A sentence's full stop or comma is not part of the path; `src/...` stands for any file.
        const path = m[1]!.replace(/[.,]+$/, '');
        if (path.includes('...') || path.includes('…')) continue;
        found.push({ path, line: i + 1 });
      }
    });
  return found;
}

describe('repository paths in the README and docs/', () => {
  it('finds paths to check in every document', () => {
    for (const file of ['README.md', 'docs/architecture.md']) expect(pathsIn(file).length, file).toBeGreaterThan(5);
    expect(exists('src/services/*.service.ts')).toBe(true);
    expect(exists('src/services/nowhere/*')).toBe(false);
    expect(expand('src/{app,deps}.ts')).toEqual(['src/app.ts', 'src/deps.ts']);
  });

  it('names only files and folders that exist', () => {
    const missing: string[] = [];
    for (const file of documents()) {
      // The SDK's own README also names paths inside the SDK package.
      const bases = file === 'sdk/README.md' ? ['', 'sdk/'] : [''];
      for (const { path, line } of pathsIn(file)) {
        if (BUILT.has(path.replace(/\/$/, ''))) continue;
        if (!expand(path).every((p) => bases.some((base) => exists(base + p)))) missing.push(`${file}:${line} ${path}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
