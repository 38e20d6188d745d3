import { Type, type Static, type TObject, type TSchema } from 'typebox';
import { IsoDateTime, Nullable, StringEnum, Uuid } from './common.schema.js';
import { PositionCursor } from './cursor.schema.js';
import { CANCEL_REASONS, WEBHOOK_EVENTS, type WebhookEvent } from '../domain/vocabulary.js';
import { CaseDetailBody } from './case.schema.js';

export const EventType = StringEnum(WEBHOOK_EVENTS, { description: WEBHOOK_EVENTS.join(', ') });

const PaymentId = Type.String({ format: 'uuid', description: 'The payment id' });
const InvoiceId = Type.String({ format: 'uuid', description: "The payment's invoice" });
const Amount = Type.Number({ description: 'Tugrik' });
const PartnerReference = Nullable(Type.String(), { description: 'Your X-Partner-Reference of the payment; null when none came' });
const CancelReason = StringEnum(CANCEL_REASONS, {
  description: 'partner: your DELETE /payments/{id}; ministry: the ministry system canceled it; expired: it was still unpaid PAYMENT_EXPIRY_MS after submission',
});

/**
 * The data of each event type, exactly as the webhook body and GET /events carry it: the one
 * definition of each event's fields (EventData and the OpenAPI webhooks section are made from it).
 */
export const EVENT_DATA = {
  'payment.submitted': Type.Object({ id: PaymentId, invoiceId: InvoiceId, partnerReference: PartnerReference }, { additionalProperties: false }),
  'payment.confirmed': Type.Object({ id: PaymentId, amount: Amount, partnerReference: PartnerReference }, { additionalProperties: false }),
  'payment.failed': Type.Object({ id: PaymentId, invoiceId: InvoiceId, partnerReference: PartnerReference }, { additionalProperties: false }),
  'payment.canceled': Type.Object({ id: PaymentId, invoiceId: InvoiceId, reason: CancelReason, partnerReference: PartnerReference }, { additionalProperties: false }),
  'case.opened': CaseDetailBody,
  'case.updated': CaseDetailBody,
  'case.resolved': CaseDetailBody,
} as const satisfies Record<WebhookEvent, TObject>;

const caseField = <T extends TSchema>(schema: T) => Type.Optional(schema);
const caseProperties = CaseDetailBody.properties;

/**
 * The payload of any event, the fields of EVENT_DATA together: what the webhook body carries as
 * `data`. One object rather than a union: the serializer picks no branch per answer.
 */
export const EventData = Type.Object(
  {
    id: Type.String({ format: 'uuid', description: 'The payment id; on a case.* event, the case id' }),
    invoiceId: Type.Optional(InvoiceId),
    amount: Type.Optional(Amount),
    reason: Type.Optional(CancelReason),
    partnerReference: Type.Optional(PartnerReference),
    paymentId: caseField(caseProperties.paymentId),
    type: caseField(caseProperties.type),
    status: caseField(caseProperties.status),
    description: caseField(caseProperties.description),
    createdAt: caseField(caseProperties.createdAt),
    dueAt: caseField(caseProperties.dueAt),
    updatedAt: caseField(caseProperties.updatedAt),
    resolution: caseField(caseProperties.resolution),
    comments: caseField(caseProperties.comments),
  },
  {
    description:
      'payment.*: the payment id; payment.submitted and payment.failed add invoiceId, payment.confirmed adds amount, payment.canceled adds invoiceId and reason, and every payment event adds partnerReference (absent only on events from before it existed). case.opened, case.updated, case.resolved: the case as GET /cases/{id} shows it. Exactly the webhook body\'s data.',
  },
);

export const EventBody = Type.Object(
  {
    id: Uuid,
    type: EventType,
    createdAt: IsoDateTime,
    sequence: Type.Integer({
      minimum: 1,
      description:
        'Its position in your feed: increases in the order events become readable, so once you have read an event, no event with a lower sequence appears later. Not contiguous (gaps are normal). Store the highest you processed and read on with afterSequence.',
    }),
    data: EventData,
  },
  { description: 'Something that happened to one of your payments or cases. Every webhook delivery of it carries this id (eventId in the body, the webhook-id header).' },
);
export type EventView = Static<typeof EventBody>;

export const EventListQuery = Type.Object(
  {
    type: Type.Optional(EventType),
    paymentId: Type.Optional(Uuid),
    from: Type.Optional(Type.String({ format: 'date-time', description: 'events at or after this time' })),
    to: Type.Optional(Type.String({ format: 'date-time', description: 'events before this time' })),
    cursor: Type.Optional(PositionCursor),
    afterSequence: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: Number.MAX_SAFE_INTEGER,
        description: 'Oldest first: the events with a higher sequence than this (0: from the start). Not with cursor, from or to; nextCursor is then null.',
      }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  },
  { additionalProperties: false },
);
export type EventListFilter = Static<typeof EventListQuery>;

export const EventListBody = Type.Object({
  items: Type.Array(EventBody, { description: 'Newest first (descending sequence); with afterSequence, oldest first (ascending sequence)' }),
  nextCursor: Nullable(Type.String(), { description: 'Pass as cursor for the next page; null on the last one, and always with afterSequence' }),
});
export type EventList = Static<typeof EventListBody>;
