import { randomBytes } from 'node:crypto';
import { ConflictError, InvalidRequestError, NotFoundError, UpstreamUnavailableError } from '../domain/errors.js';
import { canMove } from '../payments/payment.machine.js';
import { amountToNumber, requestedAmount } from '../domain/money.js';
import {
  DEFAULT_SANDBOX_AMOUNT,
  SANDBOX_SCENARIOS,
  SCENARIO_DESCRIPTIONS,
  planScenario,
  type SandboxScenario,
  type ScenarioPlan,
} from '../domain/sandbox-scenarios.js';
import type { InvoiceRepository, InvoiceRow } from '../db/repositories/invoice.repository.js';
import type { SandboxPayments } from '../payments/payments.module.js';
import type { InUnitOfWork } from '../db/unit-of-work.js';
import type { MinistryAdapter, UpstreamInvoice } from '../domain/ministry.port.js';
import type { SimulatorControl, SimulatorInvoice } from '../adapters/simulator-control.client.js';
import type { InvoiceBody } from '../schemas/invoice.schema.js';
import type { ScenarioListBody } from '../schemas/sandbox.schema.js';
import { toInvoiceView } from './invoice.view.js';
import type { Clock } from '../domain/clock.port.js';

/**
 * Sandbox-only helpers (APP_ENV local/sandbox; never created in production). The partner API never
 * reveals an invoice's ministry ref_num, so the sandbox page cannot drive the simulator's control
 * API itself: this service approves a partner's own submitted payment there on its behalf.
 */
export interface SandboxServiceDeps {
  payments: SandboxPayments;
  invoices: Pick<InvoiceRepository, 'findById' | 'upsert' | 'recordAccess' | 'markPlanted'>;
  simulator: SimulatorControl;
  /** The simulated ministry scenario invoices are planted at, read back through its ordinary adapter. */
  ministry: Pick<MinistryAdapter, 'getByRef'>;
  transaction: InUnitOfWork;
  now: Clock;
}

export interface ScenarioRequest {
  scenario: SandboxScenario;
  amount?: number;
  delaySeconds?: number;
  durationSeconds?: number;
}

const SOURCE = 'mof';
const PAYEE = { id: 'GOV-MOF-01', name: 'Сангийн яам' };
const DAY_MS = 24 * 60 * 60 * 1000;
const DUE_IN_DAYS = 30;

const randomTag = () => randomBytes(5).toString('hex').toUpperCase();

/**
 * A payer register of the partner's own: its namespace (the partner id's first part) keeps it apart
 * from every other partner's and from the demo fixtures'; the service's check keeps it hidden.
 */
const registerFor = (partnerId: string) => `SBX-${partnerId.slice(0, 8).toUpperCase()}-${randomTag()}`;

export interface SandboxApproval {
  id: string;
  approved: true;
}

/** The scenario's invoice (and for `linked`, the second one it settles), as the simulator plants them. */
function invoicesFor(partnerId: string, request: ScenarioRequest, plan: ScenarioPlan, amount: number, at: Date): SimulatorInvoice[] {
  const payer = { register: registerFor(partnerId), name: 'Sandbox payer' };
  const invoice = (refNum: string, description: string, linkedRefNums: string[]): SimulatorInvoice => ({
    source: SOURCE,
    refNum,
    description,
    amount,
    status: plan.status,
    dueDate: new Date(at.getTime() + DUE_IN_DAYS * DAY_MS).toISOString(),
    issuedAt: at.toISOString(),
    payer,
    payee: PAYEE,
    rejectPayment: plan.rejectPayment,
    allowPartial: plan.allowPartial,
    linkedRefNums,
  });
  const first = `SBX-${randomTag()}`;
  if (!plan.linked) return [invoice(first, `Sandbox: ${request.scenario}`, [])];
  const second = `SBX-${randomTag()}`;
  return [invoice(first, 'Sandbox: linked, settles both', [second]), invoice(second, 'Sandbox: linked, settled with the first', [])];
}

/** Reads each planted invoice back as the ministry shows it, as any lookup would. */
async function readBack(ministry: SandboxServiceDeps['ministry'], planted: SimulatorInvoice[]): Promise<UpstreamInvoice[]> {
  const found = await Promise.all(planted.map((i) => ministry.getByRef(i.refNum)));
  return found.map((invoice, index) => {
    if (!invoice) throw new Error(`the planted invoice ${planted[index]?.refNum} is not at the ministry`);
    return invoice;
  });
}

export function createSandboxService(deps: SandboxServiceDeps) {
  const { now } = deps;

  return {
    scenarios(): ScenarioListBody {
      return { scenarios: SANDBOX_SCENARIOS.map((name) => ({ name, description: SCENARIO_DESCRIPTIONS[name] })) };
    },

    /**
     * Plants the scenario's invoice(s) at the simulated ministry and stores them as this partner's
     * alone (no other partner is shown them); answers the first as GET /invoices/{id} would.
     */
    async createInvoice(partnerId: string, request: ScenarioRequest): Promise<InvoiceBody> {
      const amountText = requestedAmount(request.amount ?? DEFAULT_SANDBOX_AMOUNT);
      if (amountText === null) throw new InvalidRequestError(['amount must be a positive number with at most 2 decimals'], '/amount');
      const at = now();
      const plan = planScenario(request.scenario, request);
      const planted = invoicesFor(partnerId, request, plan, amountToNumber(amountText), at);
      let found: UpstreamInvoice[];
      try {
        await deps.simulator.plant(planted);
        const [first] = planted;
        if (plan.behaviour && first) await deps.simulator.behave({ refNum: first.refNum, source: SOURCE }, plan.behaviour);
        found = await readBack(deps.ministry, planted);
      } catch (err) {
        throw new UpstreamUnavailableError(`sandbox scenario ${request.scenario} could not be planted: ${String(err)}`, { cause: err });
      }
      // Marked as the partner's in the transaction that stores them, so no search sees them unmarked.
      const rows: InvoiceRow[] = await deps.transaction(async (uow) => {
        const stored = await deps.invoices.upsert(found, uow);
        await deps.invoices.markPlanted(partnerId, stored, plan.paymentExpiryMs, uow);
        await deps.invoices.recordAccess(partnerId, stored, uow);
        return stored;
      });
      const first = rows.find((r) => r.ref_num === planted[0]?.refNum);
      if (!first) throw new Error('the planted invoice was not stored');
      return toInvoiceView(first, now());
    },

    /** Asks the simulator to approve the ministry-side payment; the status moves on the next GET /payments/{id}. */
    async approve(partnerId: string, paymentId: string): Promise<SandboxApproval> {
      const payment = await deps.payments.findForPartner(partnerId, paymentId);
      if (!payment) throw new NotFoundError('Payment');
      if (!canMove(payment.status, 'ministry_approved')) {
        throw new ConflictError(`Only a submitted payment can be approved; this one is ${payment.status}`);
      }
      const invoice = await deps.invoices.findById(payment.invoice_id);
      if (!invoice) throw new NotFoundError('Invoice');
      let answer;
      try {
        answer = await deps.simulator.approve({ refNum: invoice.ref_num, source: invoice.source });
      } catch (err) {
        throw new UpstreamUnavailableError(`simulator approve failed: ${String(err)}`, { cause: err });
      }
      // The simulator has no submitted payment for the invoice: approved already (e.g. automatically) or canceled.
      if (answer === 'unknown') throw new ConflictError('The simulator has no submitted payment for this invoice; it may be approved already');
      // The partner's next read shows the approval, however soon after its last read, or a check under way, it comes.
      await deps.payments.reopenStatusCheck(payment.id);
      return { id: payment.id, approved: true };
    },
  };
}

export type SandboxService = ReturnType<typeof createSandboxService>;
