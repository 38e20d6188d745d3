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

  it('keeps a codec free of the service: no other layer, no I/O, no process', async () => {
    for (const from of ["'../domain/money.js'", "'../services/qr.service.js'", "'../config.js'"]) {
      expect(await violations('src/codecs/x.codec.ts', `import { x as y } from ${from};\nexport const x = y;\n`), from).toContain('no-restricted-imports');
    }
    expect(await violations('src/codecs/x.codec.ts', "import { readFileSync } from 'node:fs';\nexport const x = readFileSync;\n")).toContain('no-restricted-imports');
    expect(await violations('src/codecs/x.codec.ts', 'export const x = process.env.PORT;\n')).toContain('no-restricted-globals');
    expect(await violations('src/codecs/x.codec.ts', "import { crc32 } from 'node:zlib';\nimport { qrSegments } from './qr-segments.codec.js';\nexport const x = [crc32, qrSegments];\n")).toEqual([]);
  });

  it('lets the domain and services use a codec, never a page script', async () => {
    expect(await violations('src/domain/x.ts', "import { crc16CcittFalse } from '../codecs/crc16.codec.js';\nexport const x = crc16CcittFalse;\n")).toEqual([]);
    expect(await violations('src/services/x.service.ts', "import { qrPngBase64 } from '../codecs/qr-png.codec.js';\nexport const x = qrPngBase64;\n")).toEqual([]);
    expect(await violations('src/http/short-link/x.ts', "import { qrPngBase64 } from '../../codecs/qr-png.codec.js';\nexport const x = qrPngBase64;\n")).toContain(
      '@typescript-eslint/no-restricted-imports',
    );
  });

  it('keeps the lower folders below their users: a primitive imports nothing, leased work no use case, the configuration neither', async () => {
    expect(await violations('src/primitives/x.helper.ts', "import { money } from '../domain/money.js';\nexport const x = money;\n")).toContain('no-restricted-imports');
    expect(await violations('src/work/x.loop.ts', "import type { PaymentService } from '../payments/payment.service.js';\nexport type X = PaymentService;\n")).toContain('no-restricted-imports');
    expect(await violations('src/config/x.ts', "import type { Db } from '../db/database.js';\nexport type X = Db;\n")).toContain('no-restricted-imports');
    expect(await violations('src/work/x.loop.ts', "import { withDeadline } from '../primitives/deadline.helper.js';\nexport const x = withDeadline;\n")).toEqual([]);
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

  it('holds every function to 40 paths, whatever its length', async () => {
    // A function of `paths` paths: the straight one and one more for each `if`.
    const branching = (paths: number) =>
      `export function f(x: number): number {\n  let a = 0;\n${Array.from({ length: paths - 1 }, (_, i) => `  if (x > ${i}) a += 1;\n`).join('')}  return a;\n}\n`;
    expect(await violations('src/services/x.service.ts', branching(41))).toContain('complexity');
    expect(await violations('src/services/x.service.ts', branching(40))).toEqual([]);
    const long = `export function f(): number {\n  let a = 0;\n${'  a += 1;\n'.repeat(200)}  return a;\n}\n`;
    expect(await violations('src/services/x.service.ts', long)).toEqual([]);
  });

  it('lets http/ import services and the domain import the domain', async () => {
    expect(await violations('src/http/routes/x.routes.ts', "import type { PaymentService } from '../../services/payment.service.js';\nexport type X = PaymentService;\n")).toEqual([]);
    expect(await violations('src/domain/x.ts', "import { canonicalAmount } from './money.js';\nexport const x = canonicalAmount;\n")).toEqual([]);
  });
});
