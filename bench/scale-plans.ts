/**
 * `EXPLAIN (ANALYZE, BUFFERS)` of the queries the reports and background claims really send: each
 * repository method runs once against a Kysely whose log hook records the compiled statements,
 * then each statement is explained with its own parameters inside a transaction that is rolled
 * back, so the explained claims and deletes change nothing.
 */
import { Kysely, PostgresDialect, type CompiledQuery } from 'kysely';
import pg from 'pg';
import type { Database } from '../src/db/db.types.js';
import { createOutbox } from '../src/db/outbox.statements.js';
import { createAuditRepository } from '../src/db/repositories/audit.repository.js';
import { createCaseRepository } from '../src/db/repositories/case.repository.js';
import { createDeliveryLogRepository } from '../src/db/repositories/delivery-log.repository.js';
import { createCounterRepository } from '../src/db/repositories/counter.repository.js';
import { createEventLogRepository } from '../src/db/repositories/event-log.repository.js';
import { createIdempotencyRepository } from '../src/db/repositories/idempotency.repository.js';
import { createMinistryCancellationRepository } from '../src/payments/ministry-cancellation.repository.js';
import { createPaymentRepository } from '../src/payments/payment.repository.js';
import { createPaymentSearchRepository } from '../src/db/repositories/payment-search.repository.js';
import { createReconciliationRepository } from '../src/db/repositories/reconciliation.repository.js';
import { createReportRepository } from '../src/db/repositories/report.repository.js';
import { createRetentionRepository } from '../src/db/repositories/retention.repository.js';
import { createPartitionRepository } from '../src/db/repositories/partition.repository.js';
import { createWebhookDeliveryRepository } from '../src/db/repositories/webhook-delivery.repository.js';
import { systemClock } from '../src/domain/clock.port.js';

const DAY = 24 * 3600 * 1000;

interface Captured {
  label: string;
  query: CompiledQuery;
}

type Step = [label: string, run: (db: Kysely<Database>) => Promise<unknown>];

export interface PlanTargets {
  partnerId: string;
  webhookId: string;
  settledIds: string[];
  lastOffset: number;
  /** Another partner's id, whose deliveries are all seeded history. */
  otherPartnerId: string;
  /** An audit entry's target that one entry names (unindexed: the search walks the log). */
  auditTargetId: string;
}

function steps({ partnerId, webhookId, settledIds, lastOffset, otherPartnerId, auditTargetId }: PlanTargets): Step[] {
  const limits = { mof: 4, etax: 4, police: 4 };
  const lease = () => new Date(Date.now() + 10_000);
  const claimLimits = { total: 32, perEndpoint: 2, perPartner: 8, endpointFree: new Map(), partnerFree: new Map() };
  return [
    ['GET /reports/summary', (db) => createReportRepository(db).summary(partnerId, new Date())],
    ['GET /reports/payments page 1: position', (db) => createReportRepository(db).paymentPosition(partnerId, 0)],
    ['GET /reports/payments page 1: rows', (db) => createPaymentRepository(db, systemClock).listForPartnerBefore(partnerId, new Date(Date.now() + DAY), 0, 20)],
    // As the report service pages: the day that holds the offset, then that day's page of it.
    ['GET /reports/payments last page: position, then rows', async (db) => {
      const at = await createReportRepository(db).paymentPosition(partnerId, lastOffset);
      if (at.day) await createPaymentRepository(db, systemClock).listForPartnerBefore(partnerId, new Date(at.day.getTime() + DAY), lastOffset - at.newer, 20);
    }],
    ['POST /payments/report: settlement ownership', (db) => createPaymentRepository(db, systemClock).ownSettledIds(partnerId, settledIds)],
    ['GET /webhooks/{id}/deliveries', (db) => createDeliveryLogRepository(db).list(webhookId, {}, null, 51)],
    ['GET /events: newest page', (db) => createEventLogRepository(db).listNewest(partnerId, {}, null, 21)],
    ['GET /events?afterSequence=0: from the start', (db) => createEventLogRepository(db).listAfter(partnerId, {}, 0, 20)],
    ['admin GET /metrics: payments by status', (db) => createReportRepository(db).paymentsByStatus()],
    ['admin GET /metrics: pending deliveries', (db) => createWebhookDeliveryRepository(db).countPending()],
    ['admin GET /admin/payments?to= (a week ago)', (db) => createPaymentSearchRepository(db).search({ to: new Date(Date.now() - 7 * DAY) }, null, 50)],
    ['admin GET /admin/deliveries?partnerId= (another partner)', (db) => createWebhookDeliveryRepository(db).listLog({ partnerId: otherPartnerId }, null, 50)],
    ['admin GET /admin/audit?targetId=', (db) => createAuditRepository(db).list({ targetId: auditTargetId }, null, 50)],
    ['admin GET /admin/discrepancies', (db) => createReconciliationRepository(db).listDiscrepancies({}, 500)],
    ['admin GET /admin/discrepancies?status=open', (db) => createReconciliationRepository(db).listDiscrepancies({ status: 'open' }, 500)],
    ['admin GET /admin/cases?status=resolved', (db) => createCaseRepository(db, createOutbox({ now: systemClock })).listQueue({ status: 'resolved' }, 100)],
    ['confirmation claim', (db) => createPaymentRepository(db, systemClock).claimDue(new Date(), lease(), limits)],
    ['owed ministry cancellations claim', (db) => createMinistryCancellationRepository(db).claimDue(new Date(), lease(), limits)],
    ['webhook delivery claim', (db) => createWebhookDeliveryRepository(db).claimDue(new Date(), lease(), claimLimits)],
    ['counter roll-up', (db) => createCounterRepository(db).rollup(5000)],
    ['retention: expired idempotency keys', (db) => createIdempotencyRepository(db).purgeExpired(new Date(), 1000)],
    ['retention: attempts, deliveries, events', async (db) =>
      createRetentionRepository(db).sweep(await createPartitionRepository(db).legacyTables(), { attemptsBefore: new Date(Date.now() - 30 * DAY), eventsBefore: new Date(Date.now() - 90 * DAY) }, 1000)],
  ];
}

/** Runs every step once, recording the statements it sent. */
async function capture(url: string, list: Step[]): Promise<Captured[]> {
  const captured: Captured[] = [];
  let current = '';
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool }),
    log: (event) => {
      if (event.level === 'query' && !/^(begin|commit|rollback)/i.test(event.query.sql)) captured.push({ label: current, query: event.query });
    },
  });
  try {
    for (const [label, run] of list) {
      current = label;
      // Nothing is due in the seeded data, so a claim leases nothing; the retention steps delete
      // one batch the sweep that follows would delete anyway.
      await run(db);
    }
  } finally {
    await db.destroy();
  }
  return captured;
}

/** A plan line that spells out a thousand-id array says nothing more past its start. */
const clip = (line: string) => (line.length > MAX_LINE ? `${line.slice(0, MAX_LINE)} …` : line);
const MAX_LINE = 240;

export async function explainAll(url: string, targets: PlanTargets): Promise<string> {
  const captured = await capture(url, steps(targets));
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const out: string[] = [];
  try {
    for (const { label, query } of captured) {
      await client.query('BEGIN');
      try {
        const res = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${query.sql}`, [...query.parameters]);
        out.push(`## ${label}\n\n${query.sql.replace(/\s+/g, ' ').trim()}\n\n${res.rows.map((r) => clip(r['QUERY PLAN'])).join('\n')}\n`);
      } finally {
        await client.query('ROLLBACK');
      }
    }
  } finally {
    await client.end();
  }
  return out.join('\n');
}
