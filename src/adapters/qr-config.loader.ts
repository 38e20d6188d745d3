import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { TSchema, Static } from 'typebox';
import { Value } from 'typebox/value';
import { BanksFileSchema, type BankLinkConfig } from '../domain/bank-links.schema.js';
import { QrSchemeConfigSchema, type QrSchemeConfig } from '../domain/emvco-qr.js';

export const DEFAULT_BANKS_PATH = fileURLToPath(
  new URL('../../config/banks.json', import.meta.url),
);
export const DEFAULT_QR_SCHEMES_PATH = fileURLToPath(
  new URL('../../config/qr-schemes.json', import.meta.url),
);

export class QrConfigError extends Error {
  override name = 'QrConfigError';
}

export interface QrConfig {
  banks: BankLinkConfig[];
  schemes: QrSchemeConfig;
}

export async function loadQrConfig(
  paths: { banksPath?: string; schemesPath?: string } = {},
): Promise<QrConfig> {
  const [banks, schemes] = await Promise.all([
    loadBankLinksConfig(paths.banksPath),
    loadQrSchemeConfig(paths.schemesPath),
  ]);
  return { banks, schemes };
}

export async function loadBankLinksConfig(path = DEFAULT_BANKS_PATH): Promise<BankLinkConfig[]> {
  const { banks } = await readValidated(path, BanksFileSchema);
  const duplicate = banks.find((bank, i) => banks.findIndex((b) => b.name === bank.name) !== i);
  if (duplicate) throw new QrConfigError(`${path}: bank "${duplicate.name}" is listed twice`);
  return banks;
}

export async function loadQrSchemeConfig(path = DEFAULT_QR_SCHEMES_PATH): Promise<QrSchemeConfig> {
  return readValidated(path, QrSchemeConfigSchema);
}

async function readValidated<T extends TSchema>(path: string, schema: T): Promise<Static<T>> {
  let value: unknown;
  try {
    value = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new QrConfigError(`${path}: cannot read JSON: ${reason}`, { cause: error });
  }
  if (!Value.Check(schema, value)) {
    const problems = Value.Errors(schema, value)
      .slice(0, 5)
      .map((e) => `${e.instancePath || '/'} ${e.message}`);
    throw new QrConfigError(`${path}: invalid config: ${problems.join('; ')}`);
  }
  return value;
}
