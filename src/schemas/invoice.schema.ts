import { Type, type Static } from 'typebox';
import { Nullable, StringEnum, Uuid } from './common.schema.js';
import { INVOICE_STATUSES } from '../domain/vocabulary.js';

export const InvoiceBody = Type.Object(
  {
    id: Uuid,
    description: Type.String(),
    amount: Type.Number(),
    status: StringEnum(INVOICE_STATUSES),
    dueDate: Nullable(Type.String({ format: 'date-time' })),
    issuedAt: Nullable(Type.String({ format: 'date-time' })),
    vehicleNo: Nullable(Type.String()),
    payer: Nullable(Type.Object({ register: Type.String(), name: Type.String() }, { additionalProperties: false })),
    payee: Type.Object({ id: Type.String(), name: Type.String() }, { additionalProperties: false }),
    year: Type.Optional(Type.Unsafe<number | string>({ type: ['number', 'string'] })),
  },
  { additionalProperties: false },
);
export type InvoiceBody = Static<typeof InvoiceBody>;

export const InvoiceListBody = Type.Object(
  {
    invoices: Type.Array(InvoiceBody),
    total: Type.Number({ description: 'Sum of the amounts of the listed invoices (not a count).' }),
  },
  { additionalProperties: false },
);
export type InvoiceListBody = Static<typeof InvoiceListBody>;

export const InvoiceSearchQuery = Type.Object(
  {
    ttd: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Taxpayer number (ТТД)' })),
    vehicle: Type.Optional(Type.String({ minLength: 1, maxLength: 32, description: 'Vehicle plate' })),
    taxRef: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Tax reference' })),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    maxProperties: 1,
    description: 'Exactly one of ttd, vehicle, taxRef.',
    'x-violation': 'exactly one of ttd, vehicle or taxRef must be given',
  },
);
export type InvoiceSearchQuery = Static<typeof InvoiceSearchQuery>;

export const RefNumParams = Type.Object(
  { refNum: Type.String({ minLength: 1, maxLength: 64 }) },
  { additionalProperties: false },
);
