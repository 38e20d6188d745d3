import { Type } from 'typebox';

/** Ministry of Finance wire format: camelCase, amounts as JSON numbers, ISO times, `{ data }`. */

const NullableString = Type.Union([Type.String(), Type.Null()]);
const Text = Type.String({ minLength: 1 });

const MofInvoice = Type.Object({
  invoiceNo: Text,
  title: Type.String(),
  totalAmount: Type.Number(),
  paymentStatus: Type.Union([Type.Literal('UNPAID'), Type.Literal('PAID'), Type.Literal('CANCELLED')]),
  dueDate: NullableString,
  createdAt: NullableString,
  payer: Type.Union([Type.Object({ regNo: Text, fullName: Type.String() }), Type.Null()]),
  // Not a key: a payee id the QR cannot carry, the empty one included, is replaced when the QR is built.
  recipient: Type.Object({ orgId: Type.String(), orgName: Type.String() }),
  plateNo: NullableString,
  taxReference: NullableString,
  taxYear: Type.Optional(Type.Union([Type.Number(), Type.String()])),
  linkedInvoices: Type.Array(Text),
});

export const MofInvoiceList = Type.Object({ data: Type.Array(MofInvoice) });
export const MofInvoiceOne = Type.Object({ data: MofInvoice });

export const MofSubmitAnswer = Type.Object({
  data: Type.Union([
    Type.Object({ paymentId: Text, accepted: Type.Literal(true), linkedInvoices: Type.Array(Text) }),
    Type.Object({ paymentId: Text, accepted: Type.Literal(false), rejectReason: Type.String() }),
  ]),
});

export const MofPaymentAnswer = Type.Object({
  data: Type.Object({
    paymentId: Text,
    state: Type.Union([Type.Literal('PENDING'), Type.Literal('APPROVED'), Type.Literal('REVERSED'), Type.Literal('REJECTED')]),
    approvedAt: NullableString,
  }),
});

export const MofSettlementAnswer = Type.Object({
  data: Type.Array(
    Type.Object({
      paymentId: Text,
      invoiceNo: Text,
      amount: Type.Number(),
      payerRegNo: NullableString,
      payerName: NullableString,
      title: Type.String(),
      settledAt: Type.String(),
    }),
  ),
});

export const MofError = Type.Object({ error: Type.Object({ code: Type.String(), message: Type.String() }) });
