import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import { Value } from 'typebox/value';
import { OVERSIZE_DEFAULTS, SIM_OPERATIONS, type Fault } from '../fault.registry.js';
import { parseFixtureFile } from '../fixtures.schema.js';
import { mongoFromNumber, mongoToFixed2 } from '../simulator.money.js';
import type { SimPayment, SimulatorState } from '../simulator.state.js';
import type { SourceRouteOptions } from './source-routes.types.js';

const SourceSchema = Type.Union([Type.Literal('mof'), Type.Literal('etax'), Type.Literal('police')]);

const ApproveBody = Type.Object({ refNum: Type.String({ minLength: 1 }), source: Type.Optional(SourceSchema) });

const FaultBody = Type.Object({
  source: SourceSchema,
  mode: Type.Union([
    Type.Literal('none'),
    Type.Literal('error'),
    Type.Literal('timeout'),
    Type.Literal('slow'),
    Type.Literal('loaded'),
    Type.Literal('late'),
    Type.Literal('malformed'),
    Type.Literal('huge-members'),
    Type.Literal('huge-string'),
    Type.Literal('endless'),
  ]),
  delayMs: Type.Optional(Type.Integer({ minimum: 0 })),
  /** huge-members: keys of the extra member; huge-string: characters of the extra string. */
  size: Type.Optional(Type.Integer({ minimum: 0, maximum: 2 ** 32 })),
  perInFlightMs: Type.Optional(Type.Integer({ minimum: 0 })),
  operation: Type.Optional(Type.Union(SIM_OPERATIONS.map((name) => Type.Literal(name)))),
});

const OutcomeBody = Type.Object({
  refNum: Type.String({ minLength: 1 }),
  source: Type.Optional(SourceSchema),
  outcome: Type.Union([Type.Literal('rejected'), Type.Literal('canceled'), Type.Literal('unknown')]),
});

const CallsQuery = Type.Object({ source: SourceSchema, operation: Type.Union(SIM_OPERATIONS.map((name) => Type.Literal(name))) });
const HoldBody = Type.Object({ source: SourceSchema, refNum: Type.String({ minLength: 1 }), point: Type.Optional(Type.Union([Type.Literal('before'), Type.Literal('after')])) });
const ReleaseBody = Type.Object({ source: SourceSchema, refNum: Type.String({ minLength: 1 }), fail: Type.Optional(Type.Boolean()) });

const DropBody = Type.Object({ refNum: Type.String({ minLength: 1 }) });
const LagBody = Type.Object({ refNum: Type.String({ minLength: 1 }), source: Type.Optional(SourceSchema), seconds: Type.Number({ minimum: 0, maximum: 3600 }) });
const Seconds = Type.Number({ minimum: 0, maximum: 3600 });
const BehaviourBody = Type.Object(
  {
    refNum: Type.String({ minLength: 1 }),
    source: Type.Optional(SourceSchema),
    approveAfterSeconds: Type.Optional(Seconds),
    failAfterSeconds: Type.Optional(Seconds),
    neverApprove: Type.Optional(Type.Boolean()),
    unavailableSeconds: Type.Optional(Seconds),
  },
  { additionalProperties: false },
);
const AmountBody = Type.Object({ refNum: Type.String({ minLength: 1 }), amount: Type.Number({ minimum: 0 }) });

const DEFAULT_SLOW_MS = 800;
const DEFAULT_PER_IN_FLIGHT_MS = 50;

/** The control API accepts the fixture document or one bare invoice. */
function asFixtureFile(body: unknown): unknown {
  const isDocument = typeof body === 'object' && body !== null && 'invoices' in body;
  return isDocument ? body : { invoices: [body] };
}

function describePayment(payment: SimPayment) {
  return {
    source: payment.source,
    paymentId: payment.paymentId,
    refNum: payment.refNum,
    amount: mongoToFixed2(payment.amountMongo),
    status: payment.status,
    linkedRefNums: payment.linkedRefNums,
    submittedAt: payment.submittedAt.toISOString(),
    confirmedAt: payment.confirmedAt?.toISOString() ?? null,
    canceledAt: payment.canceledAt?.toISOString() ?? null,
  };
}

/** The calls a source got, as the fault hook counted them: what a test bounds the service's concurrency by. */
function callRoutes(app: FastifyInstance, state: SimulatorState): void {
  /** How many calls of one operation a source got, and the most in flight at once (overall and per payment) since the last reset. */
  app.get('/calls', async (request, reply) => {
    const query = request.query;
    if (!Value.Check(CallsQuery, query)) return reply.code(400).send({ error: `query must be ?source=mof|etax|police&operation=${SIM_OPERATIONS.join('|')}` });
    return state.calls.report(query.source, query.operation);
  });

  /** Starts the counts and peaks of /calls over (calls in flight stay counted). */
  app.post('/calls/reset', async () => {
    state.calls.reset();
    return { reset: true };
  });
}

/** Submits held on the way and the log of every submit the ministry took: a stalled request made to order. */
function submitRoutes(app: FastifyInstance, state: SimulatorState): void {
  /** The next submit of the invoice is held, before the ministry sees it (default) or after it answered, until released. */
  app.post('/submits/hold', async (request, reply) => {
    const body = request.body;
    if (!Value.Check(HoldBody, body)) return reply.code(400).send({ error: 'body must be { source, refNum, point?: before|after }' });
    const point = body.point ?? 'before';
    state.submits.hold(body.source, body.refNum, point);
    return { hold: { source: body.source, refNum: body.refNum, point } };
  });

  /** `fail`: the held submit answers 500, as a ministry that broke off the call. */
  app.post('/submits/release', async (request, reply) => {
    const body = request.body;
    if (!Value.Check(ReleaseBody, body)) return reply.code(400).send({ error: 'body must be { source, refNum, fail?: boolean }' });
    const fail = body.fail ?? false;
    if (!state.submits.release(body.source, body.refNum, fail)) return reply.code(404).send({ error: `no hold for ${body.refNum}` });
    return { released: { source: body.source, refNum: body.refNum, fail } };
  });

  /** Every submit the ministry took (`repeat`: a payment id it already had), and the ones held now. */
  app.get<{ Querystring: { refNum?: string } }>('/submits', async (request) => ({
    submits: state.submits.submits(request.query.refNum).map((r) => ({ ...r, at: r.at.toISOString() })),
    held: state.submits.held(),
  }));
}

/** Invoices planted at the ministry, and a view of one that lags behind its approvals. */
function invoiceRoutes(app: FastifyInstance, state: SimulatorState): void {
  app.post('/invoices', async (request, reply) => {
    const parsed = parseFixtureFile(asFixtureFile(request.body));
    if (!parsed.ok) return reply.code(400).send({ error: 'invalid invoices', problems: parsed.problems });
    const { invoices } = parsed.file;
    invoices.forEach((invoice) => state.upsertInvoice(invoice));
    return { upserted: invoices.map(({ source, refNum }) => ({ source, refNum })) };
  });

  /** After the next approval of a payment of this invoice, its view keeps answering as before the approval for `seconds`. */
  app.post('/invoices/lag', async (request, reply) => {
    const body = request.body;
    if (!Value.Check(LagBody, body)) return reply.code(400).send({ error: 'body must be { refNum, source?, seconds: 0-3600 }' });
    const sources = body.source ? [body.source] : (['mof', 'etax', 'police'] as const);
    const lagged = sources.filter((source) => state.lagViewAfterApproval(source, body.refNum, body.seconds * 1000));
    if (lagged.length === 0) return reply.code(404).send({ error: `no invoice ${body.refNum}` });
    return { lag: { refNum: body.refNum, sources: lagged, seconds: body.seconds } };
  });

  /**
   * How the ministry treats this invoice's payments from now on: approve each `approveAfterSeconds`
   * after it was accepted (auto-approval on or off), fail it `failAfterSeconds` after, or never
   * approve it; and answer its submits 500, as a ministry that is down, for `unavailableSeconds`.
   */
  app.post('/invoices/behaviour', async (request, reply) => {
    const body = request.body;
    if (!Value.Check(BehaviourBody, body)) {
      return reply.code(400).send({ error: 'body must be { refNum, source?, approveAfterSeconds?, failAfterSeconds?, neverApprove?, unavailableSeconds? } with seconds 0-3600' });
    }
    const { refNum, source, approveAfterSeconds, failAfterSeconds, neverApprove, unavailableSeconds } = body;
    const ms = (seconds: number | undefined) => (seconds === undefined ? undefined : seconds * 1000);
    const behaviour = {
      approveAfterMs: ms(approveAfterSeconds),
      failAfterMs: ms(failAfterSeconds),
      neverApprove,
      unavailableUntil: unavailableSeconds === undefined ? undefined : Date.now() + unavailableSeconds * 1000,
    };
    const sources = source ? [source] : (['mof', 'etax', 'police'] as const);
    const set = sources.filter((s) => state.setBehaviour(s, refNum, behaviour));
    if (set.length === 0) return reply.code(404).send({ error: `no invoice ${refNum}` });
    return { behaviour: { refNum, sources: set, approveAfterSeconds, failAfterSeconds, neverApprove, unavailableSeconds } };
  });
}

export const controlRoutes: FastifyPluginAsync<SourceRouteOptions> = async (app, { state }) => {
  invoiceRoutes(app, state);

  app.post('/approve', async (request, reply) => {
    const body = request.body;
    if (!Value.Check(ApproveBody, body)) return reply.code(400).send({ error: 'body must be { refNum, source? }' });
    const payment = state.approve(body.refNum, body.source);
    if (!payment) return reply.code(404).send({ error: `no submitted payment for ${body.refNum}` });
    return { approved: describePayment(payment) };
  });

  app.post('/faults', async (request, reply) => {
    const body = request.body;
    if (!Value.Check(FaultBody, body)) {
      return reply.code(400).send({
        error: `body must be { source, mode: none|error|timeout|slow|loaded|late|malformed|huge-members|huge-string|endless, delayMs?, perInFlightMs?, size?, operation?: ${SIM_OPERATIONS.join('|')} }`,
      });
    }
    const loaded = body.mode === 'loaded';
    // A loaded source's delay is mostly the load's: its fixed part defaults to nothing.
    const fault: Fault = { mode: body.mode, delayMs: body.delayMs ?? (loaded ? 0 : DEFAULT_SLOW_MS), perInFlightMs: body.perInFlightMs ?? (loaded ? DEFAULT_PER_IN_FLIGHT_MS : 0) };
    if (body.mode === 'huge-members' || body.mode === 'huge-string') fault.size = body.size ?? OVERSIZE_DEFAULTS[body.mode];
    state.faults.set(body.source, fault, body.operation);
    return { source: body.source, ...(body.operation ? { operation: body.operation } : {}), ...fault };
  });

  /** The ministry decides about a submitted payment on its own: it rejects, cancels or loses it. */
  app.post('/payments/outcome', async (request, reply) => {
    const body = request.body;
    if (!Value.Check(OutcomeBody, body)) {
      return reply.code(400).send({ error: 'body must be { refNum, source?, outcome: rejected|canceled|unknown }' });
    }
    const payment = state.submittedFor(body.refNum, body.source);
    if (!payment) return reply.code(404).send({ error: `no submitted payment for ${body.refNum}` });
    state.settleOutcome(payment, body.outcome);
    if (body.outcome === 'unknown') {
      return { forgotten: { paymentId: payment.paymentId, refNum: payment.refNum, source: payment.source } };
    }
    return { payment: describePayment(payment) };
  });

  /** The ministry's settlement reports leave this invoice's payments out from now on. */
  app.post('/settlement/drop', async (request, reply) => {
    const body = request.body;
    if (!Value.Check(DropBody, body)) return reply.code(400).send({ error: 'body must be { refNum }' });
    state.dropFromSettlement(body.refNum);
    return { dropped: { refNum: body.refNum } };
  });

  /** The ministry's settlement reports give this amount for this invoice's payments from now on. */
  app.post('/settlement/amount', async (request, reply) => {
    const body = request.body;
    const amountMongo = Value.Check(AmountBody, body) ? mongoFromNumber(body.amount) : null;
    if (!Value.Check(AmountBody, body) || amountMongo === null) {
      return reply.code(400).send({ error: 'body must be { refNum, amount } with amount >= 0 and at most 2 decimals' });
    }
    state.setSettlementAmount(body.refNum, amountMongo);
    return { amount: { refNum: body.refNum, amount: mongoToFixed2(amountMongo) } };
  });

  submitRoutes(app, state);

  app.post('/reset', async () => {
    state.reset();
    return { reset: true };
  });

  app.get('/payments', async () => ({ payments: state.listPayments().map(describePayment) }));

  callRoutes(app, state);
  /** How many status calls arrived, and every one that arrived while another for the same payment was unanswered. */
  app.get('/status-calls', async () => state.statusCalls.report());

  /** The trace context (traceparent, tracestate) each of the latest ministry calls carried, by route template, oldest first. */
  app.get('/trace-headers', async () => ({ calls: state.traceHeaders }));
};
