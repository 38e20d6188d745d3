import { amountToNumber } from '../domain/money.js';
import { camelRow, isoDates } from '../db/rows/row.mapper.js';
import type { DiscrepancyRow, RunRow } from '../db/repositories/reconciliation.repository.js';
import type { DiscrepancyView, ReconciliationRunView } from '../schemas/back-office.schema.js';

const runRow = camelRow(['id', 'finance_day', 'status', 'matched', 'auto_confirmed', 'discrepancies', 'operator', 'started_at', 'finished_at', 'sources']);

const discrepancyRow = camelRow([
  'id', 'kind', 'finance_day', 'source', 'ref_num', 'payment_id', 'partner_id',
  'local_amount', 'ministry_amount', 'status', 'created_at', 'resolved_at', 'resolved_by', 'note',
]);

const amountOrNull = (amount: string | null) => (amount === null ? null : amountToNumber(amount));

export function runView(row: RunRow): ReconciliationRunView {
  return isoDates(runRow(row));
}

/** What the audit log keeps of an operator's run: its totals, not each source's outcome. */
export function runTotals(row: RunRow) {
  const { financeDay, status, matched, autoConfirmed, discrepancies } = runView(row);
  return { financeDay, status, matched, autoConfirmed, discrepancies };
}

export function discrepancyView(row: DiscrepancyRow): DiscrepancyView {
  const view = isoDates(discrepancyRow(row));
  return { ...view, localAmount: amountOrNull(view.localAmount), ministryAmount: amountOrNull(view.ministryAmount) };
}
