import { Type } from 'typebox';

/**
 * Traffic police wire format: UPPER_SNAKE, amounts in integer möngö, epoch-millisecond times,
 * `{ RESULT_CODE, ... }` envelope; RESULT_CODE 0 is success, anything else a refusal.
 */

const NullableString = Type.Union([Type.String(), Type.Null()]);
const NullableEpoch = Type.Union([Type.Integer(), Type.Null()]);
const Text = Type.String({ minLength: 1 });
const Ok = Type.Literal(0);

/** A refusal or error: any non-zero RESULT_CODE with its message. */
export const PoliceError = Type.Object({ RESULT_CODE: Type.Integer({ minimum: 1 }), RESULT_MSG: Type.String() });

const PoliceFine = Type.Object({
  FINE_NO: Text,
  FINE_DESC: Type.String(),
  FINE_AMOUNT: Type.Integer(),
  FINE_STATUS: Type.Union([Type.Literal('N'), Type.Literal('Y'), Type.Literal('C')]),
  DUE_DATE: NullableEpoch,
  ISSUED_AT: NullableEpoch,
  OFFENDER_REG: NullableString,
  OFFENDER_NAME: NullableString,
  // Not a key: a payee id the QR cannot carry, the empty one included, is replaced when the QR is built.
  AGENCY_ID: Type.String(),
  AGENCY_NAME: Type.String(),
  PLATE_NO: NullableString,
  TAX_REF: NullableString,
  YEAR: Type.Union([Type.Number(), Type.String(), Type.Null()]),
  LINKED_FINE_NOS: Type.Array(Text),
});

export const PoliceFineList = Type.Object({ RESULT_CODE: Ok, FINES: Type.Array(PoliceFine) });

export const PoliceSubmitAnswer = Type.Union([
  Type.Object({ RESULT_CODE: Ok, PAYMENT: Type.Object({ PAYMENT_ID: Text, LINKED_FINE_NOS: Type.Array(Text) }) }),
  PoliceError,
]);

export const PolicePaymentAnswer = Type.Object({
  RESULT_CODE: Ok,
  PAYMENT: Type.Object({
    PAYMENT_ID: Text,
    PAY_STATUS: Type.Union([Type.Literal('WAITING'), Type.Literal('DONE'), Type.Literal('REVERSED'), Type.Literal('REJECTED')]),
    CONFIRMED_AT: NullableEpoch,
  }),
});

export const PoliceSettlementAnswer = Type.Object({
  RESULT_CODE: Ok,
  ENTRIES: Type.Array(
    Type.Object({
      PAYMENT_ID: Text,
      FINE_NO: Text,
      PAY_AMOUNT: Type.Integer(),
      OFFENDER_REG: NullableString,
      OFFENDER_NAME: NullableString,
      FINE_DESC: Type.String(),
      CONFIRMED_AT: Type.Integer(),
    }),
  ),
});
