import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SECRET_MIN_LENGTH, secretVariables, settingVariables } from '../../src/config/config.js';

/*
 * The README's configuration table is written for operators: this holds it to the settings
 * table in src/config.ts, so a setting added, renamed or dropped without its row fails here.
 */

/** The rows of the README's configuration table. */
function tableRows(): string[] {
  const readme = readFileSync('README.md', 'utf8');
  const section = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1));
  return section.split('\n').filter((line) => line.startsWith('| `'));
}

const variablesOf = (cell: string) => [...cell.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1] ?? '');

/** The variables named in the first column of the README's configuration table. */
function variablesDocumented(): string[] {
  return [...new Set(tableRows().flatMap((line) => variablesOf(line.split('|')[1] ?? '')))].sort();
}

describe('the README configuration table', () => {
  it('names every variable the service reads, and no other', () => {
    expect(variablesDocumented()).toEqual([...settingVariables()].sort());
  });

  it('gives each secret the minimum length the service holds it to outside local', () => {
    expect(secretVariables().sort()).toEqual(['ADMIN_TOKEN', 'ADMIN_TOKENS', 'WEBHOOK_SECRET_KEY']);
    for (const variable of secretVariables()) {
      const row = tableRows().find((line) => variablesOf(line.split('|')[1] ?? '').includes(variable));
      expect(row, variable).toContain(`at least ${SECRET_MIN_LENGTH} characters outside \`local\``);
    }
  });
});
