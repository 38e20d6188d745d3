import { Type, type Static } from 'typebox';

/** One bank or wallet app. `linkTemplate` is a deeplink with a `{qr}` placeholder. */
export const BankLinkConfigSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    description: Type.String({ maxLength: 200 }),
    logo: Type.String({ pattern: '^https://[^\\s]+$' }),
    linkTemplate: Type.String({ pattern: '^[A-Za-z][A-Za-z0-9+.-]*:[^\\s]*\\{qr\\}[^\\s]*$' }),
  },
  { additionalProperties: false },
);

export type BankLinkConfig = Static<typeof BankLinkConfigSchema>;

/** Shape of `config/banks.json`. */
export const BanksFileSchema = Type.Object(
  { banks: Type.Array(BankLinkConfigSchema, { minItems: 1 }) },
  { additionalProperties: false },
);

export type BanksFile = Static<typeof BanksFileSchema>;
