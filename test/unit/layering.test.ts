import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const eslint = new ESLint({ cwd: root });

/** The rule ids ESLint reports for `code` as if it were the file at `path`. */
async function violations(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: `${root}/${path}` });
  return (result?.messages ?? []).map((m) => m.ruleId ?? m.message);
}

describe('layering rule (eslint.config.js)', () => {
  it('refuses an import of http/ from services, db, adapters, jobs and schemas', async () => {
    const fromHttp = "import { errorBody } from '../http/plugins/errors.plugin.js';\nexport const x = errorBody;\n";
    for (const path of ['src/services/x.service.ts', 'src/db/x.ts', 'src/adapters/x.client.ts', 'src/jobs/x.job.ts', 'src/schemas/x.schema.ts']) {
      expect(await violations(path, fromHttp), path).toContain('no-restricted-imports');
    }
    const deeper = "import { errorBody } from '../../http/plugins/errors.plugin.js';\nexport const x = errorBody;\n";
    expect(await violations('src/db/repositories/x.repository.ts', deeper)).toContain('no-restricted-imports');
  });

  it('refuses I/O and other layers in the domain', async () => {
    expect(await violations('src/domain/x.ts', "import { readFileSync } from 'node:fs';\nexport const x = readFileSync;\n")).toContain('no-restricted-imports');
    expect(await violations('src/domain/x.ts', "import type { Db } from '../db/database.js';\nexport type X = Db;\n")).toContain('no-restricted-imports');
    expect(await violations('src/domain/x.ts', "export const x = () => fetch('http://example.test');\n")).toContain('no-restricted-globals');
    expect(await violations('src/domain/x.ts', 'export const x = process.env.PORT;\n')).toContain('no-restricted-globals');
  });

  it('refuses drivers and fetch in services', async () => {
    expect(await violations('src/services/x.service.ts', "import pg from 'pg';\nexport const x = pg;\n")).toContain('no-restricted-imports');
    expect(await violations('src/services/x.service.ts', "export const x = () => fetch('http://example.test');\n")).toContain('no-restricted-globals');
  });

  it('keeps the transaction in src/db: services and jobs take only the opaque UnitOfWork', async () => {
    const trx = "import type { Trx } from '../db/unit-of-work.js';\nexport type X = Trx;\n";
    expect(await violations('src/services/x.service.ts', trx)).toContain('@typescript-eslint/no-restricted-imports');
    expect(await violations('src/jobs/x.job.ts', "import { trxOf } from '../db/unit-of-work.js';\nexport const x = trxOf;\n")).toContain('@typescript-eslint/no-restricted-imports');
    expect(await violations('src/services/x.service.ts', "import type { UnitOfWork } from '../db/unit-of-work.js';\nexport type X = UnitOfWork;\n")).toEqual([]);
  });

  it('holds every function under 80 lines', async () => {
    // A function of `lines` lines: its signature, a declaration, `lines - 4` statements, the return and the brace.
    const long = (lines: number) => `export function f(): number {\n  let a = 0;\n${'  a += 1;\n'.repeat(lines - 4)}  return a;\n}\n`;
    expect(await violations('src/services/x.service.ts', long(81))).toContain('max-lines-per-function');
    expect(await violations('src/services/x.service.ts', long(80))).toEqual([]);
  });

  it('lets http/ import services and the domain import the domain', async () => {
    expect(await violations('src/http/routes/x.routes.ts', "import type { PaymentService } from '../../services/payment.service.js';\nexport type X = PaymentService;\n")).toEqual([]);
    expect(await violations('src/domain/x.ts', "import { canonicalAmount } from './money.js';\nexport const x = canonicalAmount;\n")).toEqual([]);
  });
});
