/**
 * What a year of the service's own work leaves beside the books bench/scale-seed.ts loads, so the
 * operator's reports read a history that grows with the volume as theirs would:
 * - every event has its position in the feed, as the assigner gives one after each commit (a
 *   backlog of unpositioned events would keep the assigner and every GET /events writing while the
 *   endpoints are timed);
 * - the daily reconciliation ran on each of the past 365 finance days (one run, three completed
 *   sources a day, so the schedule has nothing due while the endpoints are timed);
 * - a discrepancy per 100 payments, at least 1,000, half of them resolved by one of five operators;
 * - a case per 200 payments, at least 200, resolved with their evidence, and 150 unresolved ones
 *   (the queue an operator works through, which does not grow with history), none past due;
 * - an audit entry per resolved discrepancy and case.
 * Statements that find their part already there do nothing, so a seed that writes any of it
 * itself is not doubled.
 */
import pg from 'pg';

const OPERATORS = 5;
const UNRESOLVED_CASES = 150;
/** The Mongolian finance day (UTC+8) of a timestamp, as the service writes it. */
const financeDay = (ts: string) => `to_char((${ts}) AT TIME ZONE 'UTC' + interval '8 hours', 'YYYY-MM-DD')`;
const iso = (ts: string) => `to_char((${ts}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The evidence a case's first pass gathers, in the shape GET /admin/cases answers. */
const evidence = (at: string) => `jsonb_build_object(
  'gatheredAt', ${iso(at)},
  'payment', jsonb_build_object('status', p.status, 'amount', p.amount::text, 'source', p.source, 'refNum', p.ref_num, 'financeDay', ${financeDay('p.created_at')}),
  'timeline', '[]'::jsonb,
  'ministryStatus', jsonb_build_object('status', 'confirmed', 'confirmedAt', ${iso('p.created_at')}, 'error', NULL),
  'ministryInvoice', jsonb_build_object('found', true, 'status', 'paid', 'amount', p.amount::text, 'payerRegister', 'TP****', 'error', NULL),
  'settlement', jsonb_build_object('financeDay', ${financeDay('p.created_at')}, 'lines', '[]'::jsonb, 'error', NULL),
  'discrepancies', '[]'::jsonb)`;

/** `count` payments of a status, evenly spread over them, numbered k from 1, with their invoice's ref number. */
const spread = (status: string, count: string) => `(
  SELECT n.*, row_number() OVER (ORDER BY n.id) AS k FROM (
    SELECT q.*, i.ref_num, row_number() OVER (ORDER BY q.id) AS nth
    FROM payments q JOIN invoices i ON i.id = q.invoice_id
    WHERE q.status = '${status}'
  ) n WHERE n.nth % greatest(1, (SELECT count(*) FROM payments WHERE status = '${status}') / ${count}) = 0
  ORDER BY n.nth LIMIT ${count}
)`;

/** As migration 021 positions the events it finds: in commit order, after the last position given. */
const POSITION_EVENTS = [
  `UPDATE events e SET sequence = o.n
     FROM (SELECT id, (SELECT last FROM event_positions) + row_number() OVER (ORDER BY created_at, id) AS n FROM events WHERE sequence IS NULL) o
     WHERE e.id = o.id`,
  `UPDATE event_positions SET last = greatest(last, (SELECT coalesce(max(sequence), 0) FROM events))`,
];

function operatorStatements(): string[] {
  const discrepancies = `greatest(1000, (SELECT count(*) FROM payments) / 100)`;
  const resolvedCases = `greatest(200, (SELECT count(*) FROM payments) / 200)`;
  return [
    `INSERT INTO reconciliation_sources (finance_day, source, status, attempts, next_attempt_at, completed_at, updated_at)
       SELECT ${financeDay(`now() - d * interval '1 day'`)}, s, 'completed', 1, now() - d * interval '1 day', now() - d * interval '1 day', now() - d * interval '1 day'
       FROM generate_series(1, 365) d, unnest(ARRAY['mof','etax','police']) s
       ON CONFLICT DO NOTHING`,
    `INSERT INTO reconciliation_runs (finance_day, status, matched, auto_confirmed, discrepancies, sources, operator, started_at, finished_at)
       SELECT day, 'completed', m * 3, 0, 3,
              jsonb_build_array(${['mof', 'etax', 'police'].map((s) => `jsonb_build_object('source', '${s}', 'status', 'completed', 'matched', m, 'autoConfirmed', 0, 'discrepancies', 1, 'error', NULL)`).join(', ')}),
              NULL, at, at + interval '40 seconds'
       FROM (SELECT ${financeDay(`now() - d * interval '1 day'`)} AS day, now() - d * interval '1 day' AS at,
                    (SELECT count(*) FROM payments WHERE status = 'confirmed')::int / 365 / 3 AS m
             FROM generate_series(1, 365) d) days
       WHERE NOT EXISTS (SELECT 1 FROM reconciliation_runs)`,
    `INSERT INTO discrepancies (kind, finance_day, source, ref_num, payment_id, partner_id, local_amount, ministry_amount, status, note, created_at, resolved_at, resolved_by)
       SELECT CASE WHEN p.k % 5 = 0 THEN 'amount_mismatch' ELSE 'missing_at_ministry' END, ${financeDay('p.created_at')}, p.source, p.ref_num, p.id::text, p.partner_id,
              p.amount, CASE WHEN p.k % 5 = 0 THEN p.amount + 100 END,
              CASE WHEN p.k % 2 = 0 THEN 'resolved' ELSE 'open' END,
              CASE WHEN p.k % 2 = 0 THEN 'Settled the next day; the ministry report was late' END,
              f.at, CASE WHEN p.k % 2 = 0 THEN f.at + interval '2 hours' END, CASE WHEN p.k % 2 = 0 THEN 'ops-' || (p.k % ${OPERATORS}) END
       FROM ${spread('confirmed', discrepancies)} p, LATERAL (SELECT least(p.created_at + interval '1 day', now() - interval '1 minute') AS at) f
       WHERE NOT EXISTS (SELECT 1 FROM discrepancies)
       ORDER BY f.at`,
    `INSERT INTO cases (partner_id, payment_id, type, status, description, created_at, updated_at, due_at, assignee, outcome, resolution_note, resolved_at, resolved_by, resolved_operator, evidence, evidence_at)
       SELECT p.partner_id, p.id, (ARRAY['paid_not_updated','paid_twice','wrong_amount','canceled_not_reversed','other'])[1 + p.k % 5], 'resolved',
              'The customer says the invoice still shows unpaid', f.at, f.at + interval '1 day', f.at + interval '72 hours', 'ops-' || (p.k % ${OPERATORS}),
              'no_fault_found', 'Checked with the ministry: paid and settled', f.at + interval '1 day', 'operator', 'ops-' || (p.k % ${OPERATORS}),
              ${evidence('f.at')}, f.at + interval '5 seconds'
       FROM ${spread('confirmed', resolvedCases)} p, LATERAL (SELECT least(p.created_at + interval '2 hours', now() - interval '2 days') AS at) f
       WHERE NOT EXISTS (SELECT 1 FROM cases)
       ORDER BY f.at`,
    // Unresolved cases of the last 20 hours, about payments not confirmed here, none past its due time (24 h for this type).
    `INSERT INTO cases (partner_id, payment_id, type, status, description, created_at, updated_at, due_at, assignee, evidence, evidence_at)
       SELECT p.partner_id, p.id, 'paid_not_updated', CASE WHEN p.k % 3 = 0 THEN 'in_progress' ELSE 'open' END,
              'The customer says the invoice still shows unpaid', f.at, f.at, f.at + interval '24 hours',
              CASE WHEN p.k % 3 = 0 THEN 'ops-' || (p.k % ${OPERATORS}) END, ${evidence('f.at')}, f.at + interval '5 seconds'
       FROM ${spread('submitted', `${UNRESOLVED_CASES}`)} p, LATERAL (SELECT now() - (p.k % 20) * interval '1 hour' - interval '1 minute' AS at) f
       WHERE NOT EXISTS (SELECT 1 FROM cases WHERE status <> 'resolved')
       ORDER BY f.at`,
    `INSERT INTO audit_log (operator, action, target_type, target_id, before, after, created_at)
       SELECT operator, action, target_type, target_id, before, after, at FROM (
         SELECT resolved_by AS operator, 'discrepancy.resolve' AS action, 'discrepancy' AS target_type, id::text AS target_id,
                jsonb_build_object('status', 'open') AS before, jsonb_build_object('status', 'resolved', 'note', note) AS after, resolved_at AS at
         FROM discrepancies WHERE status = 'resolved'
         UNION ALL
         SELECT resolved_operator, 'case.resolve', 'case', id::text,
                jsonb_build_object('status', 'in_progress', 'assignee', assignee, 'outcome', NULL, 'resolvedBy', NULL),
                jsonb_build_object('status', 'resolved', 'assignee', assignee, 'outcome', outcome, 'resolvedBy', 'operator', 'note', resolution_note), resolved_at
         FROM cases WHERE status = 'resolved'
       ) entries
       WHERE NOT EXISTS (SELECT 1 FROM audit_log WHERE action IN ('discrepancy.resolve', 'case.resolve'))
       ORDER BY at`,
  ];
}

export interface History {
  /** Events given their position here (0 when the seed gave them theirs). */
  positioned: number;
  /** The highest position the seeded events hold: the live events come after it. */
  lastPosition: number;
  runs: number;
  discrepancies: number;
  cases: number;
  audit: number;
}

/** Loads the history into the seeded database at `url`. */
export async function loadHistory(url: string): Promise<History> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const positioned = (await client.query(POSITION_EVENTS[0] as string)).rowCount ?? 0;
    for (const statement of POSITION_EVENTS.slice(1)) await client.query(statement);
    // The update left a dead copy of every event it positioned: rewritten, the table is the size it would have grown to.
    if (positioned > 0) await client.query('VACUUM FULL events');
    for (const statement of operatorStatements()) await client.query(statement);
    await client.query('VACUUM ANALYZE');
    const { rows } = await client.query<Omit<History, 'positioned'>>(
      `SELECT (SELECT last::int FROM event_positions) AS "lastPosition", (SELECT count(*)::int FROM reconciliation_runs) AS runs, (SELECT count(*)::int FROM discrepancies) AS discrepancies,
              (SELECT count(*)::int FROM cases) AS cases, (SELECT count(*)::int FROM audit_log) AS audit`,
    );
    return { positioned, ...(rows[0] as Omit<History, 'positioned'>) };
  } finally {
    await client.end();
  }
}
