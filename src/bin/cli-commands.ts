import { parseArgs } from 'node:util';
import { loadCliConfig, type CliConfig } from '../config/process-env.js';

/*
 * The operator CLI: each command is one request to the admin API, and prints its JSON answer.
 * Exit codes: 0 done, 1 the API refused or could not be reached (or a reconciliation run came
 * back partial), 2 a usage error.
 */

type Options = Record<string, string | boolean | undefined>;

interface Request {
  method: 'GET' | 'POST' | 'PATCH';
  path: string;
  body?: unknown;
}

interface Command {
  /** Arguments and options as USAGE shows them. */
  synopsis: string;
  /** Positional arguments, in order: required ones first, optional ones end in '?'. */
  args?: string[];
  /** Options taking a value, and flags. */
  options?: string[];
  flags?: string[];
  /** Shown after the synopsis in USAGE. */
  note?: string;
  request(args: (string | undefined)[], o: Options): Request;
  /** Why a successful answer still means failure (exit code 1), or null when it does not. */
  failure?(answer: unknown): string | null;
}

class UsageError extends Error {}

function need(value: string | boolean | undefined, what: string): string {
  if (typeof value !== 'string' || value === '') throw new UsageError(`missing ${what}`);
  return value;
}

const seg = (value: string | undefined, what: string) => encodeURIComponent(need(value, what));

/** `path?name=value&…` with the options given; an option left out is not sent. */
function withQuery(path: string, params: Record<string, string | boolean | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (typeof value === 'string') query.set(name, value);
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

/** A number as given on the command line; text that is not one goes as it is, for the admin API's validation to name. */
function count(value: string | boolean | undefined, what: string): number | string {
  const text = need(value, what);
  const n = Number(text);
  return text.trim() !== '' && Number.isFinite(n) ? n : text;
}

const LIMIT_OPTIONS = ['per-second', 'per-minute', 'per-hour'];

/** `--default`, or all three limits: a partner's limits are set together. */
function rateLimits(o: Options): { perSecond: number | string; perMinute: number | string; perHour: number | string } | null {
  if (o.default) {
    const given = LIMIT_OPTIONS.filter((name) => o[name] !== undefined);
    if (given.length > 0) throw new UsageError(`--default does not go with --${given.join(', --')}`);
    return null;
  }
  return { perSecond: count(o['per-second'], '--per-second'), perMinute: count(o['per-minute'], '--per-minute'), perHour: count(o['per-hour'], '--per-hour') };
}

const get = (path: string): Request => ({ method: 'GET', path });
const post = (path: string, body?: unknown): Request => ({ method: 'POST', path, body });
const patch = (path: string, body: unknown): Request => ({ method: 'PATCH', path, body });

/** Every command, by its words; the order here is the order of USAGE. */
const COMMANDS: Record<string, Command> = {
  'partner create': {
    synopsis: '--name "X Bank" [--qr-standard qrpay|govstd] [--env sandbox|production] [--inactive]',
    options: ['name', 'qr-standard', 'env'],
    flags: ['inactive'],
    request: (_, o) =>
      post('/admin/partners', {
        name: need(o.name, '--name'),
        ...(o['qr-standard'] ? { qrStandard: o['qr-standard'] } : {}),
        ...(o.env ? { environment: o.env } : {}),
        ...(o.inactive ? { active: false } : {}),
      }),
  },
  'partner list': { synopsis: '', request: () => get('/admin/partners') },
  'partner activate': { synopsis: '<partnerId>', args: ['partner id'], request: ([id]) => patch(`/admin/partners/${seg(id, 'partner id')}`, { active: true }) },
  'partner deactivate': { synopsis: '<partnerId>', args: ['partner id'], request: ([id]) => patch(`/admin/partners/${seg(id, 'partner id')}`, { active: false }) },
  'partner rotate-key': { synopsis: '<partnerId>', args: ['partner id'], request: ([id]) => post(`/admin/partners/${seg(id, 'partner id')}/keys`) },
  'partner set-qr-standard': {
    synopsis: '<partnerId> <qrpay|govstd>',
    args: ['partner id', 'qr standard?'],
    options: ['qr-standard'],
    request: ([id, standard], o) => patch(`/admin/partners/${seg(id, 'partner id')}`, { qrStandard: need(standard ?? o['qr-standard'], 'qr standard') }),
  },
  'partner set-limits': {
    synopsis: '<partnerId> (--per-second N --per-minute N --per-hour N | --default)',
    note: '(per API key; --default: back to RATE_LIMIT_*)',
    args: ['partner id'],
    options: LIMIT_OPTIONS,
    flags: ['default'],
    request: ([id], o) => patch(`/admin/partners/${seg(id, 'partner id')}`, { rateLimits: rateLimits(o) }),
  },
  'reconcile run': {
    synopsis: '--day YYYY-MM-DD',
    note: '(exit code 1 when the run is partial)',
    options: ['day'],
    request: (_, o) => post('/admin/reconciliations', { financeDay: need(o.day, '--day') }),
    failure: (answer) =>
      (answer as { status?: string } | null)?.status === 'partial'
        ? 'the run is partial: a source failed (see sources[].error); the schedule retries it RECONCILE_RETRY_MS later'
        : null,
  },
  'reconcile runs': { synopsis: '[--day YYYY-MM-DD]', options: ['day'], request: (_, o) => get(withQuery('/admin/reconciliations', { financeDay: o.day })) },
  'reconcile discrepancies': {
    synopsis: '[--status open|resolved] [--day YYYY-MM-DD]',
    options: ['status', 'day'],
    request: (_, o) => get(withQuery('/admin/discrepancies', { status: o.status, financeDay: o.day })),
  },
  'reconcile resolve': {
    synopsis: '<discrepancyId> --note "..."',
    args: ['discrepancy id'],
    options: ['note'],
    request: ([id], o) => post(`/admin/discrepancies/${seg(id, 'discrepancy id')}/resolve`, { note: need(o.note, '--note') }),
  },
  'payments show': { synopsis: '<paymentId>', note: '(with its timeline)', args: ['payment id'], request: ([id]) => get(`/admin/payments/${seg(id, 'payment id')}`) },
  'payments search': {
    synopsis: '[--partner ID] [--status S] [--ref REFNUM] [--invoice ID] [--from ISO|DAY] [--to ISO|DAY] [--cursor C]',
    options: ['partner', 'status', 'ref', 'invoice', 'from', 'to', 'cursor'],
    request: (_, o) =>
      get(withQuery('/admin/payments', { partnerId: o.partner, status: o.status, refNum: o.ref, invoiceId: o.invoice, from: o.from, to: o.to, cursor: o.cursor })),
  },
  'deliveries list': {
    synopsis: '[--partner ID] [--status pending|succeeded|failed|canceled] [--cursor C]',
    options: ['partner', 'status', 'cursor'],
    request: (_, o) => get(withQuery('/admin/deliveries', { partnerId: o.partner, status: o.status, cursor: o.cursor })),
  },
  'deliveries redeliver': { synopsis: '<deliveryId>', args: ['delivery id'], request: ([id]) => post(`/admin/deliveries/${seg(id, 'delivery id')}/redeliver`) },
  'cases list': {
    synopsis: '[--status open|in_progress|escalated|resolved|unresolved] [--type T] [--partner ID] [--limit N]',
    note: '(default unresolved, by due time)',
    options: ['status', 'type', 'partner', 'limit'],
    request: (_, o) => get(withQuery('/admin/cases', { status: o.status, type: o.type, partnerId: o.partner, limit: o.limit })),
  },
  'cases show': { synopsis: '<caseId>', note: '(with its comments and evidence)', args: ['case id'], request: ([id]) => get(`/admin/cases/${seg(id, 'case id')}`) },
  'cases take': { synopsis: '<caseId>', args: ['case id'], request: ([id]) => post(`/admin/cases/${seg(id, 'case id')}/take`) },
  'cases comment': {
    synopsis: '<caseId> --text "..."',
    args: ['case id'],
    options: ['text'],
    request: ([id], o) => post(`/admin/cases/${seg(id, 'case id')}/comments`, { text: need(o.text, '--text') }),
  },
  'cases resolve': {
    synopsis: '<caseId> --outcome confirmed|reversed|refunded_by_partner|no_fault_found|other --note "..." [--ministry-reference REF]',
    args: ['case id'],
    options: ['outcome', 'note', 'ministry-reference'],
    request: ([id], o) =>
      post(`/admin/cases/${seg(id, 'case id')}/resolve`, {
        outcome: need(o.outcome, '--outcome'),
        note: need(o.note, '--note'),
        ...(o['ministry-reference'] !== undefined ? { ministryReference: need(o['ministry-reference'], '--ministry-reference') } : {}),
      }),
  },
  audit: {
    synopsis: '[--operator NAME] [--action A] [--target ID] [--cursor C]',
    options: ['operator', 'action', 'target', 'cursor'],
    request: (_, o) => get(withQuery('/admin/audit', { operator: o.operator, action: o.action, targetId: o.target, cursor: o.cursor })),
  },
};

export const USAGE = `Usage: npm run cli -- <command> [options]

Commands:
${Object.entries(COMMANDS)
  .map(([words, c]) => `  ${words} ${c.synopsis} ${c.note ?? ''}`.trimEnd())
  .join('\n')}

payments search, deliveries list and audit answer 50 at a time, newest first: pass nextCursor as --cursor.
Environment: ADMIN_URL (default http://127.0.0.1:$ADMIN_PORT, port 3001), ADMIN_TOKEN (default local-admin-token)`;

/** Every option any command takes, for one strict parse; each command then checks its own. */
const ALL_OPTIONS = Object.fromEntries([
  ['help', { type: 'boolean' as const, short: 'h' }],
  ...Object.values(COMMANDS).flatMap((c) => [
    ...(c.options ?? []).map((name) => [name, { type: 'string' as const }]),
    ...(c.flags ?? []).map((name) => [name, { type: 'boolean' as const }]),
  ]),
]) as Record<string, { type: 'string' | 'boolean'; short?: string }>;

interface Parsed {
  command: Command;
  args: string[];
  options: Options;
}

function parse(argv: string[]): Parsed | 'help' {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, tokens: true, options: ALL_OPTIONS });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  const { values, positionals, tokens } = parsed;
  if (values.help) return 'help';
  const [first = '', second] = positionals;
  const words = second !== undefined && COMMANDS[`${first} ${second}`] ? `${first} ${second}` : first;
  const command = COMMANDS[words];
  if (!command) {
    const family = Object.keys(COMMANDS).some((w) => w.startsWith(`${first} `));
    throw new UsageError(!first ? 'missing command' : family && second === undefined ? `missing ${first} command` : `unknown command "${positionals.slice(0, family ? 2 : 1).join(' ')}"`);
  }
  const args = positionals.slice(words.split(' ').length);
  const declared = command.args ?? [];
  if (args.length < declared.filter((a) => !a.endsWith('?')).length) throw new UsageError(`missing ${declared[args.length]}`);
  if (args.length > declared.length) throw new UsageError(`${words} does not take "${args.slice(declared.length).join(' ')}"`);
  const allowed = new Set([...(command.options ?? []), ...(command.flags ?? [])]);
  for (const t of tokens) if (t.kind === 'option' && !allowed.has(t.name)) throw new UsageError(`${words} does not take --${t.name}`);
  return { command, args, options: values };
}

/** Why fetch failed, from its cause: "connect ECONNREFUSED 127.0.0.1:3001" rather than "fetch failed". */
function reason(err: unknown): string {
  const cause = err instanceof Error && err.cause !== undefined ? err.cause : err;
  if (cause instanceof AggregateError && cause.errors.length > 0) return cause.errors.map(reason).join('; ');
  if (cause instanceof Error) return cause.message || (cause as { code?: string }).code || cause.name;
  return String(cause);
}

async function call(config: CliConfig, { method, path, body }: Request): Promise<unknown> {
  let status: number;
  let text: string;
  try {
    const res = await fetch(`${config.adminUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${config.adminToken}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    status = res.status;
    text = await res.text();
  } catch (err) {
    throw new Error(`could not reach the admin API at ${config.adminUrl}: ${reason(err)}`);
  }
  if (status < 200 || status >= 300) throw new Error(`admin API answered ${status}: ${text}`);
  try {
    return text ? (JSON.parse(text) as unknown) : null;
  } catch {
    throw new Error(`the admin API at ${config.adminUrl} answered ${status} with a body that is not JSON; is ADMIN_URL the admin listener?`);
  }
}

/** Runs one command; resolves to the process exit code. */
export async function main(argv: string[], config: CliConfig = loadCliConfig()): Promise<number> {
  try {
    const parsed = parse(argv);
    if (parsed === 'help') {
      console.log(USAGE);
      return 0;
    }
    const answer = await call(config, parsed.command.request(parsed.args, parsed.options));
    console.log(JSON.stringify(answer, null, 2));
    const failure = parsed.command.failure?.(answer) ?? null;
    if (failure === null) return 0;
    console.error(failure);
    return 1;
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`${err.message}\n\n${USAGE}`);
      return 2;
    }
    console.error(err instanceof Error ? err.message : String(err));
    return 1;
  }
}
