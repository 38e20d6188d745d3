import { UpstreamUnavailableError } from '../domain/errors.js';
import { amountToNumber, canonicalAmount } from '../domain/money.js';
import type { ReportRepository } from '../db/repositories/report.repository.js';
import type { PaymentReports } from '../payments/payments.module.js';
import { type MinistryAdapters, type SettlementEntry } from '../domain/ministry.port.js';
import { SOURCES } from '../domain/vocabulary.js';
import type { PaymentListBody, SettlementBody, SummaryBody } from '../schemas/payment.schema.js';
import type { Logger } from '../domain/logger.port.js';
import type { Clock } from '../domain/clock.port.js';

const DAY_MS = 24 * 3600 * 1000;

export function createReportService(deps: { reports: ReportRepository; payments: PaymentReports; ministries: MinistryAdapters; log: Logger; now: Clock }) {
  const { now } = deps;
  const { reports } = deps;

  return {
    async summary(partnerId: string): Promise<SummaryBody> {
      const row = await reports.summary(partnerId, now());
      return { total: row.total, open: row.open, overdue: row.overdue, paid: row.paid, totalAmountDue: amountToNumber(canonicalAmount(row.amount_due)) };
    },

    async listPayments(partnerId: string, page: number, limit: number): Promise<PaymentListBody> {
      const offset = (page - 1) * limit;
      const at = await reports.paymentPosition(partnerId, offset);
      const items = at.day
        ? await deps.payments.listForPartnerBefore(partnerId, new Date(at.day.getTime() + DAY_MS), offset - at.newer, limit)
        : [];
      const total = at.total;
      return {
        items: items.map((p) => ({
          id: p.id,
          refNum: p.ref_num,
          status: p.status,
          amount: amountToNumber(p.amount),
          source: p.source,
          partnerId: p.partner_id,
          partnerReference: p.partner_reference,
          createdAt: p.created_at.toISOString(),
        })),
        total,
        page,
        limit,
      };
    },

    /**
     * Every source's settlement for the day, narrowed to this partner's own payments (the ministry
     * report names other partners' payers). `success` is false when a source could not answer.
     */
    async settlement(partnerId: string, financeDay: string): Promise<SettlementBody> {
      const settled = await Promise.allSettled(SOURCES.map((s) => deps.ministries[s].settlement(financeDay)));
      const failed = settled.filter((r) => r.status === 'rejected');
      failed.forEach((r) => deps.log.warn({ err: r.reason }, 'settlement source failed'));
      if (failed.length === SOURCES.length) throw new UpstreamUnavailableError('settlement unavailable from every source');
      const all = settled.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
      // An entry is this partner's only if it names one of its own standing payments; it carries that payment's reference.
      const own = await deps.payments.ownSettledIds(partnerId, [...new Set(all.map((e) => e.paymentId))]);
      const entries = all.filter((e) => own.has(e.paymentId));
      return {
        financeDay,
        success: failed.length === 0,
        entries: entries.map((e: SettlementEntry) => ({
          refNum: e.refNum,
          paymentId: e.paymentId,
          partnerReference: own.get(e.paymentId) ?? null,
          amount: amountToNumber(e.amount),
          payerReg: e.payerReg,
          payerName: e.payerName,
          description: e.description,
          date: e.date,
        })),
      };
    },
  };
}

export type ReportService = ReturnType<typeof createReportService>;
