import { readFile } from 'node:fs/promises';
import { Type, type Static } from 'typebox';
import { Value } from 'typebox/value';
import { mongoFromNumber } from './simulator.money.js';

const NullableString = Type.Union([Type.String(), Type.Null()]);

export const InvoiceFixtureSchema = Type.Object(
  {
    source: Type.Union([Type.Literal('mof'), Type.Literal('etax'), Type.Literal('police')]),
    refNum: Type.String({ minLength: 1 }),
    description: Type.String(),
    amount: Type.Number({ exclusiveMinimum: 0 }),
    status: Type.Union([Type.Literal('open'), Type.Literal('paid'), Type.Literal('canceled')]),
    dueDate: Type.Optional(NullableString),
    issuedAt: Type.Optional(NullableString),
    payer: Type.Optional(
      Type.Union([
        Type.Object({ register: Type.String({ minLength: 1 }), name: Type.String() }, { additionalProperties: false }),
        Type.Null(),
      ]),
    ),
    // Any text a ministry might send, the empty id included: the service must cope with all of it.
    payee: Type.Object({ id: Type.String(), name: Type.String() }, { additionalProperties: false }),
    vehicleNo: Type.Optional(NullableString),
    taxRef: Type.Optional(NullableString),
    year: Type.Optional(Type.Union([Type.Integer(), Type.String(), Type.Null()])),
    rejectPayment: Type.Optional(Type.Boolean()),
    /** The ministry takes a payment of less than the balance as a part-payment (else it refuses it). */
    allowPartial: Type.Optional(Type.Boolean()),
    linkedRefNums: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    /**
     * Fields of the source's own invoice record replaced as given in every answer that shows it
     * (search, lookup): values no fixture field can carry (an amount past what möngö hold), so a test
     * can send them over real HTTP.
     */
    wire: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { additionalProperties: false },
);

export const FixtureFileSchema = Type.Object(
  { invoices: Type.Array(InvoiceFixtureSchema) },
  { additionalProperties: false },
);

export type InvoiceFixture = Static<typeof InvoiceFixtureSchema>;
export type FixtureFile = Static<typeof FixtureFileSchema>;

/** Problems the schema cannot express: money precision, date text, duplicate references. */
function semanticProblems(invoices: InvoiceFixture[]): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  invoices.forEach((invoice, index) => {
    const at = `/invoices/${index} (${invoice.source} ${invoice.refNum})`;
    const key = `${invoice.source}:${invoice.refNum}`;
    if (seen.has(key)) problems.push(`${at}: duplicate refNum within source`);
    seen.add(key);
    if (mongoFromNumber(invoice.amount) === null) problems.push(`${at}: amount must have at most 2 decimals`);
    for (const field of ['dueDate', 'issuedAt'] as const) {
      const value = invoice[field];
      if (typeof value === 'string' && Number.isNaN(Date.parse(value))) {
        problems.push(`${at}: ${field} is not an ISO 8601 date`);
      }
    }
  });
  return problems;
}

export type ParsedFixtures = { ok: true; file: FixtureFile } | { ok: false; problems: string[] };

/** Validates one fixture document without checking that linked invoices exist. */
export function parseFixtureFile(value: unknown): ParsedFixtures {
  if (!Value.Check(FixtureFileSchema, value)) {
    const messages = Value.Errors(FixtureFileSchema, value).map((error) => `${error.instancePath || '/'}: ${error.message}`);
    return { ok: false, problems: [...new Set(messages)].slice(0, 10) };
  }
  const problems = semanticProblems(value.invoices);
  return problems.length > 0 ? { ok: false, problems } : { ok: true, file: value };
}

function linkProblems(file: FixtureFile): string[] {
  const known = new Set(file.invoices.map((invoice) => `${invoice.source}:${invoice.refNum}`));
  return file.invoices.flatMap((invoice) =>
    (invoice.linkedRefNums ?? [])
      .filter((linked) => !known.has(`${invoice.source}:${linked}`))
      .map((linked) => `${invoice.source} ${invoice.refNum}: linked invoice ${linked} is not in the fixtures`),
  );
}

export async function loadFixtures(path: string): Promise<FixtureFile> {
  const fail = (detail: string): never => {
    throw new Error(`Invalid simulator fixtures file ${path}: ${detail}`);
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    return fail(error instanceof Error ? error.message : String(error));
  }
  const result = parseFixtureFile(parsed);
  if (!result.ok) return fail(result.problems.join('; '));
  const { file } = result;
  const broken = linkProblems(file);
  if (broken.length > 0) return fail(broken.join('; '));
  return file;
}
