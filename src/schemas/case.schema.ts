import { Type, type Static } from 'typebox';
import { ErrorBody, IsoDateTime, LiteralUnion, Nullable, StringEnum, Uuid } from './common.schema.js';
import { PositionCursor } from './cursor.schema.js';
import { DiscrepancyBody, TimelineEntry } from './back-office.schema.js';
import { CASE_AUTHORS, CASE_OUTCOMES, CASE_RESOLVERS, CASE_STATUSES, CASE_TYPES, PAYMENT_STATUSES, STORED_INVOICE_STATUSES } from '../domain/vocabulary.js';

const CaseText = (description: string) => Type.String({ minLength: 1, maxLength: 2000, description });

const CASE_TYPES_MEANING =
  'paid_not_updated: the customer paid and the ministry still shows the invoice unpaid; paid_twice; wrong_amount; canceled_not_reversed: a canceled payment whose money did not come back; other';
const CaseTypeField = StringEnum(CASE_TYPES, { description: CASE_TYPES_MEANING });
const CaseStatusField = StringEnum(CASE_STATUSES, {
  description: 'open: raised, not yet taken; in_progress: an operator took it; escalated: dueAt passed unresolved; resolved: answered (see resolution)',
});

export const CaseResolutionBody = Type.Object(
  {
    outcome: StringEnum(CASE_OUTCOMES, {
      description: 'confirmed: the ministry confirms the payment; reversed: the money was returned; refunded_by_partner: you refunded the customer; no_fault_found; other',
    }),
    ministryReference: Type.Optional(Type.String({ description: "The ministry's reference of its answer, when it gave one" })),
    note: Type.String({ description: 'What was found and done' }),
    resolvedAt: IsoDateTime,
    by: StringEnum(CASE_RESOLVERS, { description: "service: the service's own check answered it (a paid_not_updated case whose payment the ministry confirms); operator: the channel's operator" }),
  },
  { additionalProperties: false },
);

export const CaseCommentBody = Type.Object(
  {
    author: StringEnum(CASE_AUTHORS, { description: 'partner: you; operator: the channel operator' }),
    text: Type.String(),
    createdAt: IsoDateTime,
  },
  { additionalProperties: false },
);

const caseFields = {
  id: Uuid,
  paymentId: Type.String({ format: 'uuid', description: 'The payment the case is about' }),
  type: CaseTypeField,
  status: CaseStatusField,
  description: Type.String({ description: 'What the customer says went wrong, as you wrote it' }),
  createdAt: IsoDateTime,
  dueAt: Type.String({ format: 'date-time', description: 'When the case is due to be answered (CASE_TURNAROUND_HOURS for its type); past it, an unresolved case is escalated' }),
  updatedAt: IsoDateTime,
  resolution: Nullable(CaseResolutionBody, { description: 'null until the case is resolved' }),
};

/** A case as POST /cases answers it and GET /cases lists it. */
export const CaseBody = Type.Object(caseFields, { additionalProperties: false, description: 'A case you raised about one of your payments' });
export type CaseView = Static<typeof CaseBody>;

/** A case as GET /cases/{id} shows it, with its comments: also each case event's data. */
export const CaseDetailBody = Type.Object(
  { ...caseFields, comments: Type.Array(CaseCommentBody, { description: 'Oldest first: yours and the operator\'s' }) },
  { additionalProperties: false, description: 'A case you raised, with its comments' },
);
export type CaseDetailView = Static<typeof CaseDetailBody>;

export const OpenCaseBody = Type.Object(
  {
    paymentId: Type.String({ format: 'uuid', description: 'One of your payments' }),
    type: LiteralUnion(CASE_TYPES, { description: CASE_TYPES_MEANING }),
    description: CaseText('What the customer says went wrong (1-2000 characters)'),
  },
  { additionalProperties: false },
);
export type OpenCaseInput = Static<typeof OpenCaseBody>;

export const CaseCommentRequest = Type.Object({ text: CaseText('Your note (1-2000 characters)') }, { additionalProperties: false });

export const CaseListQuery = Type.Object(
  {
    status: Type.Optional(LiteralUnion(CASE_STATUSES, { description: 'Only the cases in this status' })),
    paymentId: Type.Optional(Type.String({ format: 'uuid', description: 'Only the cases about this payment' })),
    cursor: Type.Optional(PositionCursor),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  },
  { additionalProperties: false },
);
export type CaseListFilter = Static<typeof CaseListQuery>;

export const CaseListBody = Type.Object({
  items: Type.Array(CaseBody, { description: 'Newest first' }),
  nextCursor: Nullable(Type.String(), { description: 'Pass as cursor for the next page; null on the last one' }),
});
export type CaseList = Static<typeof CaseListBody>;

/** 409 `case_already_open`: the error shape and the id of the case already open. */
export const CaseConflictBody = Type.Object(
  { ...ErrorBody.properties, caseId: Type.String({ format: 'uuid', description: 'The open case of this payment and type: comment on it instead' }) },
  { description: 'The payment already has an unresolved case of this type' },
);

/** Each part of the evidence is gathered on its own: a part the ministry could not give says why in `error`. */
const GatherError = Nullable(Type.String(), { description: 'Why this part could not be gathered; null when it was' });

export const CaseEvidenceBody = Type.Object(
  {
    gatheredAt: IsoDateTime,
    payment: Type.Object({
      status: StringEnum(PAYMENT_STATUSES, { description: 'In the service\'s books when the case opened' }),
      amount: Type.String(),
      source: Type.String(),
      refNum: Type.String(),
      financeDay: Nullable(Type.String()),
    }),
    timeline: Type.Array(TimelineEntry),
    ministryStatus: Type.Object({
      status: Nullable(Type.String(), { description: "The ministry's answer about the payment: submitted, confirmed, canceled, rejected or unknown" }),
      confirmedAt: Nullable(Type.String()),
      error: GatherError,
    }),
    ministryInvoice: Type.Object({
      found: Type.Boolean(),
      status: Type.Unsafe<(typeof STORED_INVOICE_STATUSES)[number] | null>({ type: ['string', 'null'], enum: [...STORED_INVOICE_STATUSES, null] }),
      amount: Nullable(Type.String({ description: 'The amount the ministry shows on the invoice' })),
      payerRegister: Nullable(Type.String({ description: 'Masked as on the invoice' })),
      error: GatherError,
    }),
    settlement: Type.Object({
      financeDay: Nullable(Type.String()),
      lines: Type.Array(
        Type.Object({ paymentId: Type.String(), refNum: Type.String(), amount: Type.String(), date: Type.String() }),
        { description: "The day's settlement lines of this payment or its invoice" },
      ),
      error: GatherError,
    }),
    discrepancies: Type.Array(DiscrepancyBody),
  },
  { description: 'What the service looked up when the case opened' },
);
export type CaseEvidence = Static<typeof CaseEvidenceBody>;

export const AdminCaseBody = Type.Object({
  ...caseFields,
  comments: Type.Array(Type.Object({ ...CaseCommentBody.properties, operator: Nullable(Type.String()) })),
  partnerId: Uuid,
  partnerName: Type.String(),
  assignee: Nullable(Type.String()),
  escalatedAt: Nullable(IsoDateTime),
  overdue: Type.Boolean({ description: 'dueAt has passed and the case is unresolved' }),
  resolvedOperator: Nullable(Type.String()),
  evidence: Nullable(CaseEvidenceBody, { description: 'null until the service has gathered it (seconds after the case opened)' }),
});
export type AdminCaseView = Static<typeof AdminCaseBody>;

export const AdminCaseQuery = Type.Object(
  {
    status: Type.Optional(LiteralUnion([...CASE_STATUSES, 'unresolved'] as const)),
    type: Type.Optional(LiteralUnion(CASE_TYPES)),
    partnerId: Type.Optional(Uuid),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 100 })),
  },
  { additionalProperties: false },
);
export type AdminCaseFilter = Static<typeof AdminCaseQuery>;

export const AdminCaseListBody = Type.Object({ items: Type.Array(AdminCaseBody, { description: 'Unresolved: by due time, overdue first; resolved: newest first' }) });

export const ResolveCaseBody = Type.Object(
  {
    outcome: LiteralUnion(CASE_OUTCOMES),
    note: CaseText('What was found and done'),
    ministryReference: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  },
  { additionalProperties: false },
);
export type ResolveCaseInput = Static<typeof ResolveCaseBody>;
