import { readdirSync, readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import madge from 'madge';
import { beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The folders of src/, each importing only those after it (type imports included): the order
 * docs/architecture.md draws. `(root)` is the files directly in src/ (the three apps).
 */
const LAYER_ORDER = ['bin', 'composition', '(root)', 'http', 'jobs', 'services', 'payments', 'work', 'adapters', 'db', 'schemas', 'config', 'domain', 'codecs', 'primitives'];

const folderOf = (file: string): string => (file.startsWith('src/') ? (file.split('/').length > 2 ? (file.split('/')[1] ?? '') : '(root)') : file.split('/')[0] ?? '');

let graph: Record<string, string[]>;
let circular: string[][];

beforeAll(async () => {
  // baseDir keeps the paths relative to the repository, src/ and simulator/ alike.
  const result = await madge(['src', 'simulator'], { baseDir: root, fileExtensions: ['ts'], tsConfig: `${root}/tsconfig.json` });
  graph = result.obj();
  circular = result.circular();
}, 60_000);

describe('import graph', () => {
  it('has no import cycle between files', () => {
    expect(Object.keys(graph).length).toBeGreaterThan(200);
    expect(circular).toEqual([]);
  });

  it('imports only downward between the folders of src/, in the order the architecture draws', () => {
    const rank = new Map(LAYER_ORDER.map((folder, i) => [folder, i]));
    const upward: string[] = [];
    for (const [file, deps] of Object.entries(graph)) {
      if (!file.startsWith('src/')) continue;
      for (const dep of deps.filter((d) => d.startsWith('src/'))) {
        const from = folderOf(file);
        const to = folderOf(dep);
        if (from !== to && (rank.get(from) ?? -1) > (rank.get(to) ?? -1)) upward.push(`${file} -> ${dep} (${from} imports ${to}, which is above it)`);
      }
    }
    expect(upward).toEqual([]);
  });

  it("reaches a payment's life only through its module and its machine's table", () => {
    const surface = ['src/payments/payments.module.ts', 'src/payments/payment.machine.ts'];
    const reachedIn: string[] = [];
    for (const [file, deps] of Object.entries(graph)) {
      if (!file.startsWith('src/') || file.startsWith('src/payments/')) continue;
      for (const dep of deps) if (dep.startsWith('src/payments/') && !surface.includes(dep)) reachedIn.push(`${file} -> ${dep}`);
    }
    expect(Object.keys(graph).filter((f) => f.startsWith('src/payments/')).length).toBeGreaterThan(surface.length);
    expect(reachedIn).toEqual([]);
  });

  it('places every folder of src/ in that order, and the architecture describes each', () => {
    const folders = readdirSync(`${root}/src`).filter((f) => statSync(`${root}/src/${f}`).isDirectory());
    expect(folders.filter((f) => !LAYER_ORDER.includes(f))).toEqual([]);
    const architecture = readFileSync(`${root}/docs/architecture.md`, 'utf8');
    expect(folders.filter((f) => !architecture.includes(`| \`src/${f}/\``))).toEqual([]);
    expect(architecture).toContain(LAYER_ORDER.filter((f) => f !== '(root)').join(' > '));
  });
});
