import { Type, type Static } from 'typebox';
import { IsoDateTime, Nullable, StringEnum, Uuid } from './common.schema.js';
import { SerialCursor, UuidCursor } from './cursor.schema.js';
import {
  AUDIT_ACTIONS,
  DELIVERY_STATUSES,
  DISCREPANCY_KINDS,
  DISCREPANCY_STATUSES,
  PAYMENT_CAUSES,
  PAYMENT_STATUSES,
  RECONCILIATION_STATUSES,
  SOURCES,
  WEBHOOK_DISABLED_REASONS,
  type PaymentStatus,
  type WebhookDisabledReason,
} from '../domain/vocabulary.js';

const FinanceDay = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'YYYY-MM-DD, Mongolian time (UTC+8)' });
const Amount = Type.Number();
const NullableAmount = Nullable(Type.Number());
const NullableTime = Nullable(IsoDateTime);
/** A time, or a finance day: `from` a day is its start, `to` a day is its end (the day included). */
const TimeOrDay = Type.Union([IsoDateTime, Type.String({ format: 'date' })], { description: 'date-time, or YYYY-MM-DD in Mongolian time' });
const JsonObject = Type.Unsafe<Record<string, unknown> | null>({ type: ['object', 'null'], additionalProperties: true });

export const ReconcileBody = Type.Object({ financeDay: FinanceDay }, { additionalProperties: false });

const SourceOutcome = Type.Object({
  source: StringEnum(SOURCES),
  status: StringEnum(['completed', 'failed'] as const),
  matched: Type.Integer(),
  autoConfirmed: Type.Integer(),
  discrepancies: Type.Integer(),
  error: Nullable(Type.String()),
});

export const ReconciliationRunBody = Type.Object({
  id: Uuid,
  financeDay: FinanceDay,
  /** `running` only in lists, while a run is under way (or was cut off by a crash: its sources are retried). */
  status: StringEnum(['running', ...RECONCILIATION_STATUSES] as const),
  matched: Type.Integer(),
  autoConfirmed: Type.Integer(),
  discrepancies: Type.Integer(),
  operator: Nullable(Type.String()),
  startedAt: IsoDateTime,
  finishedAt: NullableTime,
  sources: Type.Array(SourceOutcome),
});
export type ReconciliationRunView = Static<typeof ReconciliationRunBody>;

export const RunListQuery = Type.Object({ financeDay: Type.Optional(FinanceDay) }, { additionalProperties: false });
export const RunListBody = Type.Object({ items: Type.Array(ReconciliationRunBody) });

export const DiscrepancyBody = Type.Object({
  id: Uuid,
  kind: StringEnum(DISCREPANCY_KINDS),
  financeDay: FinanceDay,
  source: StringEnum(SOURCES),
  refNum: Type.String(),
  paymentId: Type.String(),
  partnerId: Nullable(Type.String()),
  localAmount: NullableAmount,
  ministryAmount: NullableAmount,
  status: StringEnum(DISCREPANCY_STATUSES),
  createdAt: IsoDateTime,
  resolvedAt: NullableTime,
  resolvedBy: Nullable(Type.String()),
  note: Nullable(Type.String()),
});
export type DiscrepancyView = Static<typeof DiscrepancyBody>;

export const DiscrepancyQuery = Type.Object(
  { status: Type.Optional(StringEnum(DISCREPANCY_STATUSES)), financeDay: Type.Optional(FinanceDay) },
  { additionalProperties: false },
);
export const DiscrepancyListBody = Type.Object({ items: Type.Array(DiscrepancyBody) });
export const ResolveBody = Type.Object({ note: Type.String({ minLength: 1, maxLength: 2000 }) }, { additionalProperties: false });

export const PaymentSearchQuery = Type.Object(
  {
    paymentId: Type.Optional(Uuid),
    invoiceId: Type.Optional(Uuid),
    refNum: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    partnerId: Type.Optional(Uuid),
    status: Type.Optional(StringEnum(PAYMENT_STATUSES)),
    from: Type.Optional(TimeOrDay),
    to: Type.Optional(TimeOrDay),
    cursor: Type.Optional(UuidCursor),
  },
  { additionalProperties: false },
);

export const AdminPaymentBody = Type.Object({
  id: Uuid,
  partnerId: Uuid,
  invoiceId: Uuid,
  refNum: Type.String(),
  source: StringEnum(SOURCES),
  amount: Amount,
  status: StringEnum(PAYMENT_STATUSES),
  failureReason: Nullable(Type.String()),
  createdAt: IsoDateTime,
  updatedAt: IsoDateTime,
  submittedAt: NullableTime,
  paidAt: NullableTime,
  canceledAt: NullableTime,
});
export type AdminPaymentView = Static<typeof AdminPaymentBody>;
export const AdminPaymentListBody = Type.Object({ items: Type.Array(AdminPaymentBody), nextCursor: Nullable(Type.String()) });

export const TimelineEntry = Type.Object({
  at: IsoDateTime,
  from: Type.Unsafe<PaymentStatus | null>({ type: ['string', 'null'], enum: [...PAYMENT_STATUSES, null] }),
  to: StringEnum(PAYMENT_STATUSES),
  event: Type.String(),
  cause: StringEnum(PAYMENT_CAUSES),
  detail: JsonObject,
});
export const AdminPaymentDetailBody = Type.Object({
  ...AdminPaymentBody.properties,
  invoiceIds: Type.Array(Uuid),
  timeline: Type.Array(TimelineEntry),
});
export type AdminPaymentDetailView = Static<typeof AdminPaymentDetailBody>;

export const DeliveryQuery = Type.Object(
  { partnerId: Type.Optional(Uuid), status: Type.Optional(StringEnum(DELIVERY_STATUSES)), cursor: Type.Optional(UuidCursor) },
  { additionalProperties: false },
);
export const AdminDeliveryBody = Type.Object({
  id: Uuid,
  webhookId: Uuid,
  partnerId: Uuid,
  url: Type.String(),
  event: Type.String(),
  eventId: Uuid,
  status: StringEnum(DELIVERY_STATUSES),
  attempts: Type.Integer(),
  lastStatusCode: Nullable(Type.Integer()),
  lastError: Nullable(Type.String()),
  nextAttemptAt: IsoDateTime,
  deliveredAt: NullableTime,
  createdAt: IsoDateTime,
  webhookDisabledReason: Type.Unsafe<WebhookDisabledReason | null>({
    type: ['string', 'null'],
    enum: [...WEBHOOK_DISABLED_REASONS, null],
    description: 'Why the webhook is disabled (its pending deliveries wait): manual (by the partner) or failing (every attempt failed for WEBHOOK_DISABLE_AFTER_MS); null while enabled',
  }),
});
export type AdminDeliveryView = Static<typeof AdminDeliveryBody>;
export const AdminDeliveryListBody = Type.Object({ items: Type.Array(AdminDeliveryBody), nextCursor: Nullable(Type.String()) });

export const PushCountsQuery = Type.Object({ partnerId: Type.Optional(Uuid) }, { additionalProperties: false });
const PushCount = Type.Integer({ minimum: 0 });
/** Push notifications by status; `skipped` ones were never sent (no FCM credentials were configured). */
export const PushCountsBody = Type.Object({ pending: PushCount, delivered: PushCount, skipped: PushCount, failed: PushCount });
export type PushCountsView = Static<typeof PushCountsBody>;

export const AuditQuery = Type.Object(
  {
    operator: Type.Optional(Type.String({ maxLength: 64 })),
    action: Type.Optional(StringEnum(AUDIT_ACTIONS)),
    targetId: Type.Optional(Type.String({ maxLength: 200 })),
    cursor: Type.Optional(SerialCursor),
  },
  { additionalProperties: false },
);
export const AuditEntryBody = Type.Object({
  id: Type.String(),
  operator: Type.String(),
  action: StringEnum(AUDIT_ACTIONS),
  targetType: Type.String(),
  targetId: Type.String(),
  before: JsonObject,
  after: JsonObject,
  createdAt: IsoDateTime,
});
export type AuditEntryView = Static<typeof AuditEntryBody>;
export const AuditListBody = Type.Object({ items: Type.Array(AuditEntryBody), nextCursor: Nullable(Type.String()) });
