import { readFileSync } from 'node:fs';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createTestContext, type TestContext } from '../helpers/test-context.js';

/*
 * src/db/db.types.ts is written by hand beside the migrations; this holds it to the migrated
 * database, so a migration that adds, drops or renames a column (or makes one nullable) without
 * the matching type change fails here.
 */

interface Column {
  name: string;
  nullable: boolean;
}

/** The tables `Database` names, each with its interface's columns, read from the source with the TypeScript parser. */
function declaredTables(): Map<string, Column[]> {
  const file = ts.createSourceFile('db.types.ts', readFileSync('src/db/db.types.ts', 'utf8'), ts.ScriptTarget.Latest, true);
  const interfaces = new Map<string, ts.InterfaceDeclaration>();
  file.forEachChild((node) => {
    if (ts.isInterfaceDeclaration(node)) interfaces.set(node.name.text, node);
  });
  const database = interfaces.get('Database');
  if (!database) throw new Error('db.types.ts declares no Database interface');
  const tables = new Map<string, Column[]>();
  for (const member of database.members) {
    if (!ts.isPropertySignature(member) || !member.type || !ts.isTypeReferenceNode(member.type)) continue;
    const table = interfaces.get(member.type.typeName.getText(file));
    if (!table) throw new Error(`no interface for table ${member.name.getText(file)}`);
    tables.set(
      member.name.getText(file),
      propertiesOf(table, interfaces, file).map((p) => ({ name: p.name.getText(file), nullable: admitsNull(selectType(p, file)) })),
    );
  }
  return tables;
}

/** `unknown` admits null as it is; any other type names it. */
const admitsNull = (type: string) => type === 'unknown' || /\bnull\b/.test(type);

/** An interface's properties with those of the interfaces it extends. */
function propertiesOf(node: ts.InterfaceDeclaration, interfaces: Map<string, ts.InterfaceDeclaration>, file: ts.SourceFile): ts.PropertySignature[] {
  const inherited = (node.heritageClauses ?? []).flatMap((clause) =>
    clause.types.flatMap((t) => {
      const base = interfaces.get(t.expression.getText(file));
      return base ? propertiesOf(base, interfaces, file) : [];
    }),
  );
  return [...inherited, ...node.members.filter(ts.isPropertySignature)];
}

/** What a SELECT gives for a column: the first argument of ColumnType, or the type itself. */
function selectType(p: ts.PropertySignature, file: ts.SourceFile): string {
  const type = p.type;
  if (type && ts.isTypeReferenceNode(type) && type.typeName.getText(file) === 'ColumnType') return type.typeArguments?.[0]?.getText(file) ?? '';
  return type?.getText(file) ?? '';
}

let ctx: TestContext;
let migrated: Map<string, Column[]>;

beforeAll(async () => {
  ctx = await createTestContext();
  const { rows } = await sql<{ table_name: string; column_name: string; is_nullable: string }>`
    SELECT table_name, column_name, is_nullable FROM information_schema.columns
    WHERE table_schema = current_schema() AND table_name NOT LIKE 'kysely_%'
    ORDER BY table_name, ordinal_position`.execute(ctx.deps.db);
  migrated = new Map();
  for (const r of rows) migrated.set(r.table_name, [...(migrated.get(r.table_name) ?? []), { name: r.column_name, nullable: r.is_nullable === 'YES' }]);
});
afterAll(() => ctx?.close());

const byName = (columns: Column[]) => Object.fromEntries(columns.map((c) => [c.name, c.nullable ? 'nullable' : 'not null']));

describe('db.types.ts matches the migrated database', () => {
  it('declares every table the migrations create, and no other', () => {
    expect([...declaredTables().keys()].sort()).toEqual([...migrated.keys()].sort());
  });

  it('declares each table with its columns and their nullability', () => {
    const declared = declaredTables();
    const tables = [...migrated.keys()].sort();
    expect(Object.fromEntries(tables.map((t) => [t, byName(declared.get(t) ?? [])]))).toEqual(Object.fromEntries(tables.map((t) => [t, byName(migrated.get(t) ?? [])])));
  });
});
