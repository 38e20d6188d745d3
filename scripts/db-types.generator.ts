// `npm run db:types`: writes src/db/db.types.ts, the database's types, from the schema the
// migrations make on a fresh in-memory PGlite. kysely-codegen reads the schema; the column types
// it cannot know (the domain's words, JSON shapes, write rules) are named in TABLES below.
// test/integration/db-types.test.ts fails while the checked-in file differs from what this makes.
import { writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  DatabaseMetadata,
  PostgresDialect as CodegenDialect,
  TypeScriptSerializer,
  serializeFromMetadata,
  toKyselyPascalCase,
  type ColumnMetadata,
  type ExportStatementNode,
  type IdentifierNode,
  type InterfaceDeclarationNode,
} from 'kysely-codegen';
import { createDatabase, isConcurrentSchemaDrop, migrateToLatest, type Db } from '../src/db/database.js';

export const REGENERATE_COMMAND = 'npm run db:types';
export const DB_TYPES_FILE = fileURLToPath(new URL('../src/db/db.types.ts', import.meta.url));

/**
 * A column's TypeScript type where the schema's SQL type says too little. Given as a type (or a
 * bare string), it stands in for the SQL type's and the schema still decides the rest: `| null`
 * when the column admits null, `Generated<>` when it has a default. Given as the three sides of a
 * ColumnType, the read side admits null when the column does; the write sides are the service's
 * rules (a column set once, one only triggers write) and stay as written.
 */
type ColumnSpec =
  | string
  | {
      type?: string;
      /**
       * The type without `Generated<>` for the schema's default: for a column the service's code
       * types a selected row with through the table's interface itself (`Pick<PartnersTable, …>`).
       */
      ignoreDefault?: boolean;
      doc?: string;
    }
  | { select: string; insert: string; update: string; doc?: string };

interface TableSpec {
  doc?: string;
  columns?: Record<string, ColumnSpec>;
}

/** A jsonb column written as text and read back parsed, nullable or not (the schema says). */
const jsonColumn = (shape: string, writes: { insert?: string; update?: string } = {}) => ({ select: shape, insert: writes.insert ?? 'string', update: writes.update ?? 'string' });
/** Written by the insert when at all (omitted, it is null) and never updated. */
const setOnce = (type: string, doc: string) => ({ select: type, insert: `${type} | null | undefined`, update: 'never', doc });
/** Null or absent at creation, set and cleared later. */
const settable = (type: string, doc?: string) => ({ select: type, insert: `${type} | null | undefined`, update: `${type} | null`, doc });

const TABLES: Record<string, TableSpec> = {
  partners: {
    columns: {
      qr_standard: 'QrStandard',
      environment: 'KeyEnvironment',
      active: { type: 'boolean', ignoreDefault: true },
      rate_limit_per_second: { doc: 'All three set, or all null (the partner uses the configured defaults).' },
      created_at: 'CreatedAt',
    },
  },
  api_keys: { columns: { environment: 'KeyEnvironment', created_at: 'CreatedAt' } },
  invoices: {
    columns: {
      source: 'Source',
      amount: { doc: 'The balance: what is still owed.' },
      billed_amount: { doc: 'What the ministry billed before a payment of ours was confirmed: the most our books let it collect.' },
      status: 'StoredInvoiceStatus',
      year: { ...jsonColumn('number | string', { insert: 'string | null', update: 'string | null' }), doc: 'jsonb so a number stays a number and a string stays a string.' },
      created_at: 'CreatedAt',
    },
  },
  partner_invoices: { columns: { first_seen_at: 'CreatedAt' } },
  payments: {
    columns: {
      source: { type: 'Source', doc: "The ministry system the payment was sent to (its invoice's source)." },
      status: 'PaymentStatus',
      status_event: { doc: 'The event, cause and ministry answer of the latest state change; triggers copy them into payment_history.' },
      status_cause: 'PaymentCause',
      status_detail: jsonColumn('Record<string, unknown>', { insert: 'string | null', update: 'string | null' }),
      user_id: { doc: "The partner's end user (X-User-Id), whose devices are pushed when the payment is confirmed." },
      qr_text: { select: 'string', insert: 'string | undefined', update: 'never', doc: 'The EMVCo payload the payment was created with; written once, never updated. Null for older payments.' },
      remaining_balance: { select: 'string', insert: 'never', update: 'string | null', doc: 'A confirmed part-payment: what the ministry still showed owing on its invoice. Null otherwise.' },
      status_check_until: { doc: "The end of the lease of the status check under way (the confirmation job's or a live read's); null or past when none is." },
      status_check_token: { doc: "A live read's lease token; null while the job holds the lease (its token is check_attempts)." },
      status_checked_at: { doc: 'When the latest status check ended.' },
      expiry_ms: { select: 'number', insert: 'never', update: 'never', doc: "How long after submission the payment expires unpaid, when not PAYMENT_EXPIRY_MS (a sandbox scenario's); set once at creation." },
      trace_parent: setOnce('string', 'The W3C traceparent of the request span that created the payment; its background work continues that trace. Null for older payments.'),
      trace_state: setOnce('string', "The partner's tracestate that came with that request, carried along unchanged."),
      partner_reference: setOnce('string', "The partner's own reference of the payment (X-Partner-Reference); written once at creation. Null when none came."),
      created_at: 'CreatedAt',
    },
  },
  sandbox_invoices: {
    doc: 'An invoice a partner planted at the simulated ministry (sandbox only): visible to that partner alone.',
    columns: {
      payment_expiry_ms: { doc: 'How long after submission its payments expire unpaid; null for PAYMENT_EXPIRY_MS.' },
      created_at: 'CreatedAt',
    },
  },
  payment_history: {
    columns: {
      from_status: 'PaymentStatus',
      to_status: 'PaymentStatus',
      cause: 'PaymentCause',
      detail: jsonColumn('Record<string, unknown>', { insert: 'string | null', update: 'never' }),
    },
  },
  payment_invoices: { columns: { active: { doc: 'true while the payment holds the invoice; a partial unique index allows one holder.' } } },
  idempotency_keys: {
    columns: {
      state: "'in_progress' | 'completed'",
      lease_token: { doc: "The current claim's token; null only on rows claimed before tokens existed." },
      response_body: jsonColumn('unknown', { insert: 'string | null', update: 'string | null' }),
      created_at: 'CreatedAt',
    },
  },
  events: {
    columns: {
      payload: jsonColumn('Record<string, unknown>', { update: 'never' }),
      payment_id: setOnce('string', "The payment a payment.* event is about (its payload's id); null for a webhook.test event."),
      created_at: 'CreatedAt',
      sequence: { select: 'string', insert: 'never', update: 'string | number', doc: 'Its position in the feed, given after commit by the assigner (event-log repository); null until then.' },
    },
  },
  event_positions: {
    doc: 'One row: the highest feed position ever given (positions are never reused).',
    columns: { id: { select: 'boolean', insert: 'never', update: 'never' } },
  },
  webhooks: {
    columns: {
      events: jsonColumn('WebhookEvent[]'),
      secret_ciphertext: { doc: 'AES-256-GCM; the plaintext secret never reaches the database.' },
      created_at: 'CreatedAt',
      slow_since: settable('Date', 'Since when its attempts fail or time out; null while the latest one succeeded (see the slow lane).'),
      disabled_at: settable('Date', 'Set with `disabled_reason` while the webhook is disabled: nothing is queued for it and its pending deliveries wait.'),
      disabled_reason: settable('WebhookDisabledReason'),
      enabled_at: settable('Date', 'When it was last enabled again; failures before it do not count toward disabling it.'),
      previous_secret_ciphertext: settable('string', 'The secret a rotation replaced: it still signs deliveries until `previous_secret_expires_at`.'),
      previous_secret_expires_at: settable('Date'),
    },
  },
  webhook_deliveries: {
    columns: {
      status: 'StoredDeliveryStatus',
      next_attempt_at: { doc: 'When the next attempt is due; while a worker holds the row it is the lease expiry.' },
      created_at: 'CreatedAt',
    },
  },
  webhook_attempts: { columns: { created_at: 'CreatedAt' } },
  devices: { columns: { platform: 'Platform', created_at: 'CreatedAt' } },
  ministry_cancellations: {
    doc: 'A payment the ministry accepted and must cancel again; kept until the ministry confirms.',
    columns: {
      source: 'Source',
      created_at: 'CreatedAt',
      kind: { type: 'CancellationKind', doc: "`owed`: the service refused or expired a payment the ministry accepted; `partner`: the partner's cancel, recorded before the ministry call." },
    },
  },
  counters: { doc: "One partner's count and amount for a label and bucket (see migration 007-counters)." },
  counter_deltas: {
    doc: 'A change to a counter, written by the triggers in the changing transaction; folded in by the roll-up job.',
    columns: {
      n: { type: 'Int8', doc: "integer here, read only in a UNION ALL with counters' bigint n, which makes it a bigint (a string)." },
    },
  },
  reconciliation_sources: {
    columns: {
      source: 'Source',
      status: "'pending' | 'completed' | 'failed'",
      lease_until: { doc: 'While an instance reconciles this day and source, until when it holds it.' },
      lease_token: { doc: "The current hold's token; every write under the hold presents it (migration 015)." },
    },
  },
  reconciliation_runs: {
    columns: {
      status: "ReconciliationStatus | 'running'",
      sources: 'JsonColumn<SourceOutcome[]>',
      operator: { doc: 'null when the daily schedule ran it.' },
    },
  },
  discrepancies: { columns: { kind: 'DiscrepancyKind', source: 'Source', status: 'DiscrepancyStatus' } },
  audit_log: {
    columns: {
      action: 'AuditAction',
      before: jsonColumn('Record<string, unknown>'),
      after: jsonColumn('Record<string, unknown>'),
    },
  },
  cases: {
    doc: "A partner's case about one of its payments: answered by an operator, or by the service when its fresh check finds the payment confirmed.",
    columns: {
      type: 'CaseType',
      status: 'CaseStatus',
      outcome: 'CaseOutcome',
      resolved_by: 'CaseResolver',
      evidence: { ...jsonColumn('Record<string, unknown>', { insert: 'string | undefined', update: 'string | null' }), doc: 'What the service gathered when the case opened (CaseEvidence); null until then.' },
      evidence_lease_until: { doc: 'While a pass gathers the evidence: its lease, fenced by evidence_token.' },
    },
  },
  case_comments: { columns: { author: 'CaseAuthor' } },
  push_deliveries: {
    columns: {
      status: 'PushStatus',
      next_attempt_at: { doc: 'When the next attempt is due; while a worker holds the row it is the lease expiry.' },
      created_at: 'CreatedAt',
    },
  },
};

/** Where the names the column types use come from (kysely-codegen imports only those used). */
const IMPORTS: Record<string, string[]> = {
  '../domain/vocabulary.js': [
    'AuditAction', 'CancellationKind', 'CaseAuthor', 'CaseOutcome', 'CaseResolver', 'CaseStatus', 'CaseType', 'DiscrepancyKind', 'DiscrepancyStatus', 'KeyEnvironment', 'PaymentCause', 'PaymentStatus', 'Platform',
    'PushStatus', 'QrStandard', 'ReconciliationStatus', 'Source', 'StoredInvoiceStatus', 'WebhookDisabledReason', 'WebhookEvent',
  ],
  './column-values.types.js': ['CreatedAt', 'Decimal', 'JsonColumn', 'SourceOutcome', 'StoredDeliveryStatus'],
};

/** Code imports these from db.types.ts, where they lived before the file was generated. */
const REEXPORTS = `export type { SourceOutcome, StoredDeliveryStatus } from "./column-values.types.js";\n`;

const HEADER = `/*
 * Generated from the migrated schema by scripts/db-types.generator.ts: do not edit. After a
 * migration, run \`${REGENERATE_COMMAND}\`; column types narrower than the SQL types are named there.
 */

`;

function columnType(spec: ColumnSpec, column: ColumnMetadata): string | undefined {
  const value = (type: string, ignoreDefault = false) => {
    const nullable = column.isNullable ? `${type} | null` : type;
    return (column.hasDefaultValue || column.isAutoIncrementing) && !ignoreDefault ? `Generated<${nullable}>` : nullable;
  };
  if (typeof spec === 'string') return value(spec);
  if ('select' in spec) return `ColumnType<${column.isNullable ? `${spec.select} | null` : spec.select}, ${spec.insert}, ${spec.update}>`;
  return spec.type ? value(spec.type, spec.ignoreDefault) : undefined;
}

const docOf = (spec: ColumnSpec) => (typeof spec === 'string' ? undefined : spec.doc);

/**
 * kysely-codegen's TypeScript, with the names the service's code uses: `<Table>Table` for each
 * table's interface and `Database` for the one of all tables (kysely-codegen's `DB`).
 */
class DbTypesSerializer extends TypeScriptSerializer {
  readonly #tableDocs: Map<string, string>;

  constructor(tableDocs: Map<string, string>) {
    super({ skipAutogeneratedFileComment: true });
    this.#tableDocs = tableDocs;
  }

  override serializeIdentifier(node: IdentifierNode): string {
    return node.isTableIdentifier ? `${node.name}Table` : node.name;
  }

  override serializeInterfaceDeclaration(node: InterfaceDeclarationNode): string {
    if (node.id.isTableIdentifier || node.id.name !== 'DB') return super.serializeInterfaceDeclaration(node);
    return `interface Database ${this.serializeObjectExpression(node.body)}`;
  }

  override serializeExportStatement(node: ExportStatementNode): string {
    const { argument } = node;
    const doc = argument.type === 'InterfaceDeclaration' && argument.id.isTableIdentifier ? this.#tableDocs.get(argument.id.name) : undefined;
    return `${doc ? `/** ${doc} */\n` : ''}${super.serializeExportStatement(node)}`;
  }
}

/** kysely-codegen's Kysely, typed with the catalog tables it reads (and from Kysely's CommonJS build, as kysely-codegen is one). */
type IntrospectedDb = Parameters<CodegenDialect['introspector']['introspect']>[0]['db'];

/**
 * Kysely's table listing reads every schema in the database: a schema another run drops
 * meanwhile fails it (see isConcurrentSchemaDrop), and the listing is safe to repeat.
 */
async function introspect(dialect: CodegenDialect, db: IntrospectedDb, schema: string): Promise<DatabaseMetadata> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await dialect.introspector.introspect({ db, includePattern: `${schema}.*` });
    } catch (err) {
      if (!isConcurrentSchemaDrop(err) || attempt >= 3) throw err;
    }
  }
}

/** Applies TABLES to the introspected schema; a table or column TABLES names that the schema lacks fails. */
function narrow(metadata: DatabaseMetadata): { metadata: DatabaseMetadata; columns: Record<string, string>; tableDocs: Map<string, string> } {
  const columns: Record<string, string> = {};
  const tableDocs = new Map<string, string>();
  const tables = new Map(metadata.tables.map((t) => [t.name, t]));
  for (const [name, spec] of Object.entries(TABLES)) {
    const table = tables.get(name);
    if (!table) throw new Error(`scripts/db-types.generator.ts names table ${name}, which the migrations do not create`);
    if (spec.doc) tableDocs.set(toKyselyPascalCase(name), spec.doc);
    for (const column of Object.keys(spec.columns ?? {})) {
      if (!table.columns.some((c) => c.name === column)) throw new Error(`scripts/db-types.generator.ts names column ${name}.${column}, which the migrations do not create`);
    }
  }
  const described = metadata.tables.map((table) => ({
    ...table,
    columns: table.columns.map((column) => {
      const spec = TABLES[table.name]?.columns?.[column.name];
      if (!spec) return column;
      const type = columnType(spec, column);
      if (type) columns[`${table.name}.${column.name}`] = type;
      return { ...column, comment: docOf(spec) ?? column.comment };
    }),
  }));
  return { metadata: new DatabaseMetadata({ enums: metadata.enums, tables: described }), columns, tableDocs };
}

/** The text of db.types.ts for the migrated database `db` (its tables in `schema`). */
export async function generateDbTypes(db: Db, schema = 'public'): Promise<string> {
  const dialect = new CodegenDialect({ defaultSchemas: [schema] });
  // The same Kysely instance: the service's Database type names none of the catalog tables the
  // introspector reads, and its types come from Kysely's ES module build.
  const { metadata, columns, tableDocs } = narrow(await introspect(dialect, db as unknown as IntrospectedDb, schema));
  const body = serializeFromMetadata({
    metadata,
    dialect,
    defaultSchemas: [schema],
    overrides: { columns },
    typeMapping: { numeric: 'Decimal' },
    customImports: Object.fromEntries(Object.entries(IMPORTS).flatMap(([module, names]) => names.map((name) => [name, module]))),
    serializer: new DbTypesSerializer(tableDocs),
  });
  return `${HEADER}${body}\n${REEXPORTS}`;
}

async function main(): Promise<void> {
  const db = await createDatabase({ databaseUrl: null, dataDir: 'memory://' });
  try {
    await migrateToLatest(db);
    writeFileSync(DB_TYPES_FILE, await generateDbTypes(db));
  } finally {
    await db.destroy();
  }
  console.log(`wrote ${DB_TYPES_FILE}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
