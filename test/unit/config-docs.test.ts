import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/*
 * The README's configuration table is written by hand: this holds it to the variables
 * src/config.ts reads, so a setting added, renamed or dropped without its row fails here.
 */

/** The variables config.ts reads for the service (ADMIN_URL is the CLI's, documented with the CLI). */
function variablesRead(): string[] {
  const source = readFileSync('src/config.ts', 'utf8');
  const names = [...source.matchAll(/\(env, '([A-Z][A-Z0-9_]*)'/g)].map((m) => m[1] ?? '');
  return [...new Set(names)].filter((name) => name !== 'ADMIN_URL').sort();
}

/** The variables named in the first column of the README's configuration table. */
function variablesDocumented(): string[] {
  const readme = readFileSync('README.md', 'utf8');
  const section = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1));
  const firstCells = section.split('\n').filter((line) => line.startsWith('| `')).map((line) => line.split('|')[1] ?? '');
  return [...new Set(firstCells.flatMap((cell) => [...cell.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1] ?? '')))].sort();
}

describe('the README configuration table', () => {
  it('names every variable the service reads, and no other', () => {
    expect(variablesRead().length).toBeGreaterThan(60);
    expect(variablesDocumented()).toEqual(variablesRead());
  });
});
