import type { CaseCommentRow, CaseRecord, CaseRow } from '../db/repositories/case.repository.js';
import type { AdminCaseView, CaseDetailView, CaseEvidence, CaseView } from '../schemas/case.schema.js';

const iso = (d: Date) => d.toISOString();
const isoOrNull = (d: Date | null) => (d === null ? null : d.toISOString());

function resolutionView(row: CaseRow): CaseView['resolution'] {
  if (row.status !== 'resolved' || row.outcome === null || row.resolved_at === null || row.resolved_by === null) return null;
  return {
    outcome: row.outcome,
    ...(row.ministry_reference === null ? {} : { ministryReference: row.ministry_reference }),
    note: row.resolution_note ?? '',
    resolvedAt: iso(row.resolved_at),
    by: row.resolved_by,
  };
}

/** A case as POST /cases answers it and GET /cases lists it. */
export function caseView(row: CaseRow): CaseView {
  return {
    id: row.id,
    paymentId: row.payment_id,
    type: row.type,
    status: row.status,
    description: row.description,
    createdAt: iso(row.created_at),
    dueAt: iso(row.due_at),
    updatedAt: iso(row.updated_at),
    resolution: resolutionView(row),
  };
}

const commentView = (c: CaseCommentRow) => ({ author: c.author, text: c.text, createdAt: iso(c.created_at) });

/** A case as GET /cases/{id} shows it, and as each case event carries it. */
export function caseDetailView(record: CaseRecord): CaseDetailView {
  return { ...caseView(record.row), comments: record.comments.map(commentView) };
}

/** The operator's view: the partner's, with who holds it, the evidence, and whether it is past due. */
export function adminCaseView(record: CaseRecord, partnerName: string, now: Date): AdminCaseView {
  const { row } = record;
  return {
    ...caseView(row),
    comments: record.comments.map((c) => ({ ...commentView(c), operator: c.operator })),
    partnerId: row.partner_id,
    partnerName,
    assignee: row.assignee,
    escalatedAt: isoOrNull(row.escalated_at),
    overdue: row.status !== 'resolved' && row.due_at.getTime() <= now.getTime(),
    resolvedOperator: row.resolved_operator,
    evidence: row.evidence as CaseEvidence | null,
  };
}

/** What an operator's audit entry keeps of a case. */
export function caseAuditView(row: CaseRow) {
  return { status: row.status, assignee: row.assignee, outcome: row.outcome, resolvedBy: row.resolved_by };
}
