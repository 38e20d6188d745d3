import { Type } from 'typebox';

/**
 * Tax authority wire format: snake_case, amounts as "12000.00" strings, numeric status codes,
 * "YYYY-MM-DD HH:mm:ss" Mongolian local times, year as text, `{ result }` envelope.
 */

const NullableString = Type.Union([Type.String(), Type.Null()]);
const Text = Type.String({ minLength: 1 });

const EtaxBill = Type.Object({
  bill_no: Text,
  bill_desc: Type.String(),
  bill_amount: Type.String(),
  status_code: Type.Union([Type.Literal(0), Type.Literal(1), Type.Literal(9)]),
  due_date: NullableString,
  issue_date: NullableString,
  taxpayer_tin: NullableString,
  taxpayer_name: NullableString,
  // Not a key: a payee code the QR cannot carry, the empty one included, is replaced when the QR is built.
  org_code: Type.String(),
  org_name: Type.String(),
  plate_no: NullableString,
  tax_ref: NullableString,
  tax_year: NullableString,
  linked_bill_nos: Type.Array(Text),
});

export const EtaxBillList = Type.Object({ result: Type.Object({ bills: Type.Array(EtaxBill) }) });

export const EtaxSubmitAccepted = Type.Object({
  result: Type.Object({ payment_id: Text, linked_bill_nos: Type.Array(Text) }),
});

/** Body of 4xx answers; 422 carries the refusal reason. */
export const EtaxError = Type.Object({ error_code: Type.String(), error_msg: Type.String() });

export const EtaxPaymentAnswer = Type.Object({
  result: Type.Object({
    payment: Type.Object({
      payment_id: Text,
      status_code: Type.Union([Type.Literal(10), Type.Literal(20), Type.Literal(30), Type.Literal(40)]),
      confirmed_at: NullableString,
    }),
  }),
});

export const EtaxSettlementAnswer = Type.Object({
  result: Type.Object({
    items: Type.Array(
      Type.Object({
        payment_id: Text,
        bill_no: Text,
        paid_amount: Type.String(),
        taxpayer_tin: NullableString,
        taxpayer_name: NullableString,
        bill_desc: Type.String(),
        paid_at: Type.String(),
      }),
    ),
  }),
});
