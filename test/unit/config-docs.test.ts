import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { settingVariables } from '../../src/config.js';

/*
 * The README's configuration table is written for operators: this holds it to the settings
 * table in src/config.ts, so a setting added, renamed or dropped without its row fails here.
 */

/** The variables named in the first column of the README's configuration table. */
function variablesDocumented(): string[] {
  const readme = readFileSync('README.md', 'utf8');
  const section = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1));
  const firstCells = section.split('\n').filter((line) => line.startsWith('| `')).map((line) => line.split('|')[1] ?? '');
  return [...new Set(firstCells.flatMap((cell) => [...cell.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1] ?? '')))].sort();
}

describe('the README configuration table', () => {
  it('names every variable the service reads, and no other', () => {
    expect(variablesDocumented()).toEqual([...settingVariables()].sort());
  });
});
