import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { approve, badRequest, getPayment, ownInvoice, partnerWithPayment, payOk, type Partner } from '../helpers/api.js';
import type { AdminCaseView, CaseDetailView, CaseList, CaseView } from '../../src/schemas/case.schema.js';
import type { EventList } from '../../src/schemas/event.schema.js';
import { createCaseRepository } from '../../src/db/repositories/case.repository.js';
import { createOutbox } from '../../src/db/outbox.statements.js';

let ctx: TestContext;
let receiver: WebhookReceiver;
beforeAll(async () => {
  [ctx, receiver] = await Promise.all([createTestContext(), startReceiver()]);
});
afterAll(async () => {
  await ctx.close();
  await receiver.close();
});

/**
 * One pass of the case job alone: the confirmation job, were it to run first, could confirm a
 * payment the ministry approved before the case's own check does.
 */
async function runCaseJob(): Promise<void> {
  const job = ctx.deps.jobs.find((j) => j.name === 'cases');
  if (!job) throw new Error('no case job');
  await job.run();
}

const DAY_MS = 24 * 3_600_000;

function openCase(partner: Partner, payload: object) {
  return ctx.api(partner.apiKey, { method: 'POST', url: '/api/v1/cases', payload });
}

async function openOk(partner: Partner, paymentId: string, type = 'paid_not_updated', description = 'The customer paid and the tax office shows the invoice unpaid'): Promise<CaseView> {
  const res = await openCase(partner, { paymentId, type, description });
  expect(res.statusCode, res.body).toBe(201);
  return res.json<CaseView>();
}

async function getCase(partner: Partner, id: string): Promise<CaseDetailView> {
  const res = await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/cases/${id}` });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<CaseDetailView>();
}

function admin(method: 'GET' | 'POST', url: string, payload?: object) {
  return ctx.admin.inject({ method, url, payload, headers: { authorization: `Bearer ${ctx.config.adminToken}` } });
}

async function adminCase(id: string): Promise<AdminCaseView> {
  const res = await admin('GET', `/admin/cases/${id}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json<AdminCaseView>();
}

async function caseEvents(partner: Partner, paymentId: string) {
  const res = await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/events?paymentId=${paymentId}&limit=100` });
  expect(res.statusCode).toBe(200);
  return res
    .json<EventList>()
    .items.filter((e) => e.type.startsWith('case.'))
    .reverse();
}

describe('POST /cases', () => {
  it('opens a case on the partner\'s own payment with its due time, and GET shows it with its comments', async () => {
    const { partner, payment } = await partnerWithPayment(ctx, 'mof');
    const opened = await openOk(partner, payment.id, 'wrong_amount', 'Charged 12 000 instead of 10 000');
    expect(opened).toEqual({
      id: expect.any(String),
      paymentId: payment.id,
      type: 'wrong_amount',
      status: 'open',
      description: 'Charged 12 000 instead of 10 000',
      createdAt: expect.any(String),
      dueAt: new Date(new Date(opened.createdAt).getTime() + 120 * 3_600_000).toISOString(),
      updatedAt: opened.createdAt,
      resolution: null,
    });
    expect(await getCase(partner, opened.id)).toEqual({ ...opened, comments: [] });
  });

  it('gives a paid_not_updated case 24 hours', async () => {
    const { partner, payment } = await partnerWithPayment(ctx, 'etax');
    const opened = await openOk(partner, payment.id);
    expect(new Date(opened.dueAt).getTime() - new Date(opened.createdAt).getTime()).toBe(DAY_MS);
  });

  it('refuses a second unresolved case of the same payment and type with 409 case_already_open naming the open one', async () => {
    const { partner, payment } = await partnerWithPayment(ctx, 'mof');
    const first = await openOk(partner, payment.id, 'paid_twice');
    const again = await openCase(partner, { paymentId: payment.id, type: 'paid_twice', description: 'again' });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ statusCode: 409, code: 'case_already_open', caseId: first.id });
    // Another type of the same payment is a case of its own.
    expect((await openCase(partner, { paymentId: payment.id, type: 'other', description: 'something else' })).statusCode).toBe(201);
  });

  it('makes one case of two opened at once for the same payment and type', async () => {
    const { partner, payment } = await partnerWithPayment(ctx, 'etax');
    const both = await Promise.all([0, 1].map(() => openCase(partner, { paymentId: payment.id, type: 'paid_twice', description: 'twice at once' })));
    expect(both.map((r) => r.statusCode).sort()).toEqual([201, 409]);
    const created = both.find((r) => r.statusCode === 201)?.json<CaseView>();
    expect(both.find((r) => r.statusCode === 409)?.json()).toMatchObject({ code: 'case_already_open', caseId: created?.id });
    expect((await caseEvents(partner, payment.id)).map((e) => e.type)).toEqual(['case.opened']);
  });

  it('opens case after case on the same connections: the insert stays right once its statement is prepared', async () => {
    const { partner } = await partnerWithPayment(ctx, 'mof');
    const types = ['paid_not_updated', 'paid_twice', 'wrong_amount', 'canceled_not_reversed', 'other'];
    for (let n = 0; n < 3; n++) {
      const payment = await payOk(ctx, partner.apiKey, { invoiceId: (await ownInvoice(ctx, partner, 'mof')).id });
      for (const type of types) await openOk(partner, payment.id, type, `case ${n} ${type}`);
    }
    const again = await openCase(partner, { paymentId: (await ctx.api(partner.apiKey, { method: 'GET', url: '/api/v1/cases?limit=1' })).json<CaseList>().items[0]?.paymentId, type: 'other', description: 'x' });
    expect(again.json()).toMatchObject({ code: 'case_already_open' });
  });

  it("keeps partners apart: another partner's payment and case are not found", async () => {
    const mine = await partnerWithPayment(ctx, 'mof');
    const theirs = await partnerWithPayment(ctx, 'mof');
    const res = await openCase(theirs.partner, { paymentId: mine.payment.id, type: 'other', description: 'not theirs' });
    expect(res.statusCode).toBe(404);
    const opened = await openOk(mine.partner, mine.payment.id, 'other');
    expect((await ctx.api(theirs.partner.apiKey, { method: 'GET', url: `/api/v1/cases/${opened.id}` })).statusCode).toBe(404);
    const comment = await ctx.api(theirs.partner.apiKey, { method: 'POST', url: `/api/v1/cases/${opened.id}/comments`, payload: { text: 'hi' } });
    expect(comment.statusCode).toBe(404);
    const list = await ctx.api(theirs.partner.apiKey, { method: 'GET', url: '/api/v1/cases' });
    expect(list.json<CaseList>().items.map((c) => c.id)).not.toContain(opened.id);
    expect((await ctx.api(mine.partner.apiKey, { method: 'GET', url: `/api/v1/cases/${randomUUID()}` })).statusCode).toBe(404);
  });

  it('refuses an unknown field, an unknown type and a description over 2000 characters', async () => {
    const { partner, payment } = await partnerWithPayment(ctx, 'mof');
    const unknown = await openCase(partner, { paymentId: payment.id, type: 'other', description: 'x', extra: 1 });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json()).toEqual(badRequest(unknown, ['/extra', 'property extra should not exist']));
    expect((await openCase(partner, { paymentId: payment.id, type: 'lost', description: 'x' })).statusCode).toBe(400);
    expect((await openCase(partner, { paymentId: payment.id, type: 'other', description: 'x'.repeat(2001) })).statusCode).toBe(400);
    expect((await openCase(partner, { paymentId: payment.id, type: 'other', description: '' })).statusCode).toBe(400);
  });
});

describe('GET /cases', () => {
  it('lists newest first with a cursor bound to the partner, filtered by status and payment', async () => {
    const { partner, payment } = await partnerWithPayment(ctx, 'mof');
    const other = await partnerWithPayment(ctx, 'mof');
    const a = await openOk(partner, payment.id, 'paid_twice');
    const b = await openOk(partner, payment.id, 'wrong_amount');
    const c = await openOk(partner, payment.id, 'other');
    const first = (await ctx.api(partner.apiKey, { method: 'GET', url: '/api/v1/cases?limit=2' })).json<CaseList>();
    expect(first.items.map((x) => x.id)).toEqual([c.id, b.id]);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = (await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/cases?limit=2&cursor=${first.nextCursor}` })).json<CaseList>();
    expect(second).toEqual({ items: [a], nextCursor: null });
    // Another partner's cursor is refused, as on /events.
    const foreign = await ctx.api(other.partner.apiKey, { method: 'GET', url: `/api/v1/cases?cursor=${first.nextCursor}` });
    expect(foreign.statusCode).toBe(400);
    const byPayment = (await ctx.api(partner.apiKey, { method: 'GET', url: `/api/v1/cases?paymentId=${payment.id}&status=open` })).json<CaseList>();
    expect(byPayment.items).toHaveLength(3);
    const resolved = (await ctx.api(partner.apiKey, { method: 'GET', url: '/api/v1/cases?status=resolved' })).json<CaseList>();
    expect(resolved.items).toEqual([]);
  });
});

describe('comments', () => {
  it("adds the bank's note, the operator's, and each is a case.updated event", async () => {
    const { partner, payment } = await partnerWithPayment(ctx, 'mof');
    const opened = await openOk(partner, payment.id, 'other');
    const res = await ctx.api(partner.apiKey, { method: 'POST', url: `/api/v1/cases/${opened.id}/comments`, payload: { text: 'Receipt no. 417' } });
    expect(res.statusCode, res.body).toBe(201);
    expect((await admin('POST', `/admin/cases/${opened.id}/comments`, { text: 'Asked the ministry' })).statusCode).toBe(200);
    const audit = (await admin('GET', `/admin/audit?targetId=${opened.id}`)).json<{ items: { action: string; after: unknown }[] }>();
    expect(audit.items).toMatchObject([{ action: 'case.comment', after: { status: 'open', comment: 'Asked the ministry' } }]);
    const shown = await getCase(partner, opened.id);
    expect(shown.comments.map((c) => [c.author, c.text])).toEqual([
      ['partner', 'Receipt no. 417'],
      ['operator', 'Asked the ministry'],
    ]);
    expect((await caseEvents(partner, payment.id)).map((e) => e.type)).toEqual(['case.opened', 'case.updated', 'case.updated']);
    const last = (await caseEvents(partner, payment.id)).at(-1);
    expect(last?.data).toEqual(shown);
  });
});

describe('the evidence and the automatic answer', () => {
  it('answers a paid_not_updated case at once when the ministry confirms the payment, confirming the payment through its machine', async () => {
    const { partner, invoice, payment } = await partnerWithPayment(ctx, 'mof');
    // The ministry has the money; our books have not checked yet.
    expect((await approve(ctx, invoice.refNum)).statusCode).toBe(200);
    const opened = await openOk(partner, payment.id);
    await runCaseJob();
    const shown = await getCase(partner, opened.id);
    expect(shown.status).toBe('resolved');
    expect(shown.resolution).toEqual({ outcome: 'confirmed', note: expect.stringContaining('The ministry confirms the payment'), resolvedAt: expect.any(String), by: 'service' });
    expect((await getPayment(ctx, partner.apiKey, payment.id)).json()).toMatchObject({ status: 'confirmed' });
    const events = await caseEvents(partner, payment.id);
    expect(events.map((e) => e.type)).toEqual(['case.opened', 'case.resolved']);
    expect(events[1]?.data).toEqual(shown);
    const evidence = (await adminCase(opened.id)).evidence;
    expect(evidence).toMatchObject({ payment: { status: 'submitted', refNum: invoice.refNum }, ministryStatus: { status: 'confirmed', error: null }, ministryInvoice: { found: true } });
    const timeline = await admin('GET', `/admin/payments/${payment.id}`);
    expect(timeline.json<{ timeline: { to: string; cause: string }[] }>().timeline.at(-1)).toMatchObject({ to: 'confirmed', cause: 'case' });
  });

  it('leaves the case open with the evidence when the ministry has not confirmed the payment', async () => {
    const { partner, invoice, payment } = await partnerWithPayment(ctx, 'mof');
    const opened = await openOk(partner, payment.id);
    await runCaseJob();
    const seen = await adminCase(opened.id);
    expect(seen.status).toBe('open');
    expect(seen.evidence).toMatchObject({
      payment: { status: 'submitted', refNum: invoice.refNum, source: 'mof' },
      ministryStatus: { status: 'submitted', error: null },
      ministryInvoice: { found: true, status: 'open', error: null },
      settlement: { error: null },
      discrepancies: [],
    });
    expect(seen.evidence?.timeline.map((t) => t.to)).toEqual(['pending', 'submitted']);
    expect((await getPayment(ctx, partner.apiKey, payment.id)).json()).toMatchObject({ status: 'submitted' });
  });

  it('does not answer other types itself, even when the ministry confirms the payment', async () => {
    const { partner, invoice, payment } = await partnerWithPayment(ctx, 'mof');
    expect((await approve(ctx, invoice.refNum)).statusCode).toBe(200);
    const opened = await openOk(partner, payment.id, 'paid_twice');
    await runCaseJob();
    expect((await getCase(partner, opened.id)).status).toBe('open');
  });
});

describe('the evidence lease', () => {
  it("lets a pass that lost a case's lease write nothing, and the pass that took it over write once", async () => {
    const { partner, payment } = await partnerWithPayment(ctx, 'mof');
    // Gathered by the nudge or not, the case's evidence is wiped to be claimed again here.
    const opened = await openOk(partner, payment.id, 'other');
    await runCaseJob();
    const gathered = (await adminCase(opened.id)).evidence;
    expect(gathered).not.toBeNull();
    await ctx.deps.db.updateTable('cases').set({ evidence: null, evidence_at: null, evidence_lease_until: null }).where('id', '=', opened.id).execute();
    const repo = createCaseRepository(ctx.deps.db, createOutbox({ now: ctx.now }));
    const at = ctx.now();
    const first = (await repo.claimEvidence(at, new Date(at.getTime() + 1000), 100)).find((c) => c.id === opened.id);
    expect(first).toBeDefined();
    // Still held: nobody else claims it.
    expect((await repo.claimEvidence(at, new Date(at.getTime() + 1000), 100)).map((c) => c.id)).not.toContain(opened.id);
    const later = new Date(at.getTime() + 2000);
    const second = (await repo.claimEvidence(later, new Date(later.getTime() + 1000), 100)).find((c) => c.id === opened.id);
    expect(second).toBeDefined();
    if (!first || !second) return;
    const stale = { ...gathered, ministryStatus: { status: null, confirmedAt: null, error: 'the stale pass' } };
    expect(await repo.saveEvidence(first, stale, later)).toBe(false);
    expect(await repo.saveEvidence(second, { ...gathered }, later)).toBe(true);
    expect((await adminCase(opened.id)).evidence).toEqual(gathered);
  });
});

describe('webhooks', () => {
  it('delivers the case events to a webhook that subscribed to them, and none to one that did not', async () => {
    const { partner, invoice, payment } = await partnerWithPayment(ctx, 'mof');
    const subscribe = (events: string[]) =>
      ctx.api(partner.apiKey, { method: 'POST', url: '/api/v1/webhooks', payload: { url: `${receiver.url}/${events[0]}`, secret: 'cases-test-secret-0123456789abcdef', events } });
    expect((await subscribe(['case.opened', 'case.resolved'])).statusCode).toBe(201);
    expect((await subscribe(['payment.confirmed'])).statusCode).toBe(201);
    expect((await approve(ctx, invoice.refNum)).statusCode).toBe(200);
    const opened = await openOk(partner, payment.id);
    await runCaseJob();
    await ctx.runJobs();
    const bodies = receiver.received.filter((r) => r.body.includes(payment.id)).map((r) => ({ url: r.url, body: JSON.parse(r.body) as { event: string; data: { id: string } } }));
    expect(bodies.filter((b) => b.url.endsWith('/case.opened')).map((b) => [b.body.event, b.body.data.id])).toEqual([
      ['case.opened', opened.id],
      ['case.resolved', opened.id],
    ]);
    expect(bodies.filter((b) => b.url.endsWith('/payment.confirmed')).map((b) => b.body.event)).toEqual(['payment.confirmed']);
  });
});

describe('the clock', () => {
  it('escalates an unresolved case once its due time passes, with a case.updated event and the breach in the metrics', async () => {
    const { partner, payment } = await partnerWithPayment(ctx, 'police');
    const opened = await openOk(partner, payment.id);
    await runCaseJob();
    expect((await getCase(partner, opened.id)).status).toBe('open');
    ctx.advance(DAY_MS + 1000);
    await runCaseJob();
    const shown = await getCase(partner, opened.id);
    expect(shown.status).toBe('escalated');
    expect((await adminCase(opened.id)).overdue).toBe(true);
    expect((await caseEvents(partner, payment.id)).map((e) => [e.type, e.data.status])).toEqual([
      ['case.opened', 'open'],
      ['case.updated', 'escalated'],
    ]);
    const metrics = (await ctx.admin.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/^cases_overdue\{type="paid_not_updated"\} [1-9]/m);
    expect(metrics).toMatch(/^case_escalations_total\{type="paid_not_updated"\} [1-9]/m);
    expect(metrics).toMatch(/^cases_open\{type="paid_not_updated",status="escalated"\} [1-9]/m);
    // Another pass escalates nothing twice.
    await runCaseJob();
    expect((await caseEvents(partner, payment.id)).length).toBe(2);
  });
});

describe("the operator's queue", () => {
  it('takes, resolves and audits a case; a second answer is a 409', async () => {
    const { partner, payment } = await partnerWithPayment(ctx, 'mof');
    const opened = await openOk(partner, payment.id, 'canceled_not_reversed');
    const queue = (await admin('GET', '/admin/cases?status=unresolved')).json<{ items: AdminCaseView[] }>();
    expect(queue.items.map((c) => c.id)).toContain(opened.id);
    const dues = queue.items.map((c) => c.dueAt);
    expect(dues).toEqual([...dues].sort());

    const taken = await admin('POST', `/admin/cases/${opened.id}/take`);
    expect(taken.json()).toMatchObject({ status: 'in_progress', assignee: 'admin' });
    const resolved = await admin('POST', `/admin/cases/${opened.id}/resolve`, { outcome: 'reversed', note: 'The ministry returned the money', ministryReference: 'MOF-REV-9' });
    expect(resolved.statusCode, resolved.body).toBe(200);
    expect((await getCase(partner, opened.id)).resolution).toEqual({
      outcome: 'reversed',
      ministryReference: 'MOF-REV-9',
      note: 'The ministry returned the money',
      resolvedAt: expect.any(String),
      by: 'operator',
    });
    const again = await admin('POST', `/admin/cases/${opened.id}/resolve`, { outcome: 'other', note: 'twice' });
    expect(again.statusCode).toBe(409);
    const comment = await ctx.api(partner.apiKey, { method: 'POST', url: `/api/v1/cases/${opened.id}/comments`, payload: { text: 'late' } });
    expect(comment.statusCode).toBe(409);

    const audit = (await admin('GET', `/admin/audit?targetId=${opened.id}`)).json<{ items: { action: string; before: unknown; after: unknown }[] }>();
    expect(audit.items.map((e) => e.action).sort()).toEqual(['case.resolve', 'case.take']);
    expect(audit.items.find((e) => e.action === 'case.resolve')).toMatchObject({
      before: { status: 'in_progress', assignee: 'admin', outcome: null },
      after: { status: 'resolved', outcome: 'reversed', resolvedBy: 'operator', note: 'The ministry returned the money' },
    });
    expect((await caseEvents(partner, payment.id)).map((e) => e.type)).toEqual(['case.opened', 'case.updated', 'case.resolved']);
    // Resolved, the payment may have a new case of the same type.
    expect((await openCase(partner, { paymentId: payment.id, type: 'canceled_not_reversed', description: 'again' })).statusCode).toBe(201);
  });
});
