import { Type, type Static } from 'typebox';
import { StringEnum } from './common.schema.js';
import { SANDBOX_SCENARIOS } from '../domain/sandbox-scenarios.js';

export const SandboxScenarioName = StringEnum(SANDBOX_SCENARIOS);

export const ScenarioListBody = Type.Object(
  {
    scenarios: Type.Array(Type.Object({ name: SandboxScenarioName, description: Type.String() }, { additionalProperties: false })),
  },
  { additionalProperties: false },
);
export type ScenarioListBody = Static<typeof ScenarioListBody>;

const Seconds = (description: string) => Type.Integer({ minimum: 1, maximum: 3600, description });

export const CreateSandboxInvoiceBody = Type.Object(
  {
    scenario: SandboxScenarioName,
    amount: Type.Optional(
      Type.Number({ exclusiveMinimum: 0, maximum: 99_999_999_999_999, description: 'Tugrik, at most 2 decimals; default 10000' }),
    ),
    delaySeconds: Type.Optional(Seconds('approve-later: approved this long after the payment (default 30); never-approve: the payment expires this long after it')),
    durationSeconds: Type.Optional(Seconds('ministry-unavailable: how long from the invoice\'s creation paying it answers 503 (default 30)')),
  },
  { additionalProperties: false },
);
export type CreateSandboxInvoiceBody = Static<typeof CreateSandboxInvoiceBody>;
