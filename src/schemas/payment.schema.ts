import { Type, type Static } from 'typebox';
import { Nullable, StringEnum, Uuid } from './common.schema.js';
import { PAYMENT_STATUSES } from '../domain/vocabulary.js';
import { REFUSAL_CODES } from '../domain/errors.js';

export const PaymentStatus = StringEnum(PAYMENT_STATUSES);

export const CreatePaymentBody = Type.Object(
  {
    invoiceId: Uuid,
    amount: Type.Optional(
      Type.Number({ exclusiveMinimum: 0, maximum: 99_999_999_999_999, description: 'Tugrik, at most 2 decimals; omitted = the full invoice amount' }),
    ),
  },
  { additionalProperties: false },
);
export type CreatePaymentBody = Static<typeof CreatePaymentBody>;

const IdempotencyKey = (name: string, description: string) =>
  Type.Optional(Type.String({ minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7E]*$', description, 'x-violation': `${name} must be printable ASCII characters without spaces` }));

export const IdempotencyHeaders = Type.Object({
  'x-idempotency-key': IdempotencyKey('x-idempotency-key', 'A client-chosen UUID is recommended'),
  'idempotency-key': IdempotencyKey('idempotency-key', "The same as X-Idempotency-Key (the IETF HTTPAPI draft's name): either header works; both, with different values, is a 400"),
  'x-user-id': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 128,
      pattern: '^[\\x21-\\x7E]*$',
      'x-violation': 'x-user-id must be printable ASCII characters without spaces',
      description: "The partner's end user, as `userId` in POST /devices: once the payment is confirmed, that user's devices get a push",
    }),
  ),
  'x-partner-reference': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 64,
      pattern: '^[\\x21-\\x7E]*$',
      'x-violation': 'x-partner-reference must be 1-64 printable ASCII characters without spaces',
      description:
        "Your own reference of the payment (your transaction id), 1-64 printable ASCII characters without spaces: stored with the payment and returned as `partnerReference` on it, its events and its settlement entries. Part of what an idempotency key is compared on",
    }),
  ),
});

/** The partner's own reference of the payment (X-Partner-Reference); null when none came with POST /payments. */
const PartnerReference = Nullable(Type.String(), { description: 'Your X-Partner-Reference of the payment; null when none came' });

export const QrPayBody = Type.Object({
  qrText: Type.String(),
  qrImage: Type.String({ description: 'Base64 PNG' }),
  shortUrl: Type.Optional(Type.String()),
  urls: Type.Array(
    Type.Object({ name: Type.String(), description: Type.String(), logo: Type.String(), link: Type.String() }, { additionalProperties: false }),
  ),
});
export type QrPayBody = Static<typeof QrPayBody>;

export const PaymentCreatedBody = Type.Object({
  success: Type.Boolean(),
  id: Uuid,
  status: PaymentStatus,
  amount: Type.Number(),
  invoiceId: Uuid,
  invoiceIds: Type.Array(Uuid),
  partnerReference: PartnerReference,
  qrpay: QrPayBody,
  message: Type.Optional(Type.String({ description: '"idempotent" on a replayed response' })),
});
export type PaymentCreatedBody = Static<typeof PaymentCreatedBody>;

export const PaymentFailedBody = Type.Object({
  success: Type.Literal(false),
  refNum: Type.String(),
  message: Type.String(),
  code: StringEnum(REFUSAL_CODES, { description: 'Why the payment was refused (docs/errors.md)' }),
  requestId: Type.String({ description: 'The X-Request-Id of this answer' }),
});
export type PaymentFailedBody = Static<typeof PaymentFailedBody>;

export const PaymentBody = Type.Object({
  id: Uuid,
  status: PaymentStatus,
  amount: Type.Number(),
  invoiceId: Uuid,
  invoiceIds: Type.Array(Uuid),
  partnerReference: PartnerReference,
  paidAt: Type.Optional(Type.String({ format: 'date-time' })),
});
export type PaymentBody = Static<typeof PaymentBody>;

export const CancelBody = Type.Object({ id: Uuid, canceled: Type.Literal(true) });

export const SettlementRequestBody = Type.Object(
  { financeDay: Type.String({ format: 'date', pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'YYYY-MM-DD' }) },
  { additionalProperties: false },
);

export const SettlementBody = Type.Object({
  financeDay: Type.String(),
  success: Type.Boolean(),
  entries: Type.Array(
    Type.Object({
      refNum: Type.String(),
      paymentId: Type.String({ format: 'uuid', description: 'The payment the ministry settled: the id POST /payments returned' }),
      partnerReference: PartnerReference,
      amount: Type.Number(),
      payerReg: Type.String(),
      payerName: Type.String(),
      description: Type.String(),
      date: Type.String(),
    }),
  ),
});
export type SettlementBody = Static<typeof SettlementBody>;

export const SummaryBody = Type.Object({
  total: Type.Number({ description: 'Number of invoices this partner has retrieved' }),
  open: Type.Number(),
  overdue: Type.Number(),
  paid: Type.Number(),
  totalAmountDue: Type.Number({ description: 'Sum of amounts of open and overdue invoices' }),
});
export type SummaryBody = Static<typeof SummaryBody>;

export const PaymentListQuery = Type.Object(
  {
    page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  },
  { additionalProperties: false },
);

export const PaymentListBody = Type.Object({
  items: Type.Array(
    Type.Object({
      id: Uuid,
      refNum: Type.String(),
      status: PaymentStatus,
      amount: Type.Number(),
      source: Type.String(),
      partnerId: Uuid,
      partnerReference: PartnerReference,
      createdAt: Type.String({ format: 'date-time' }),
    }),
  ),
  total: Type.Number(),
  page: Type.Number(),
  limit: Type.Number(),
});
export type PaymentListBody = Static<typeof PaymentListBody>;
