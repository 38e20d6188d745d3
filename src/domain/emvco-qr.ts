import { Type, type Static } from 'typebox';
import { crc16CcittFalse } from '../codecs/crc16.codec.js';
import { canonicalAmount } from './money.js';
import type { QrStandard } from './vocabulary.js';

/**
 * EMVCo Merchant-Presented Mode (MPM) QR payload, as partners' banking apps scan it.
 * Lengths are counted in characters (Unicode code points), as EMVCo defines them; the CRC is
 * taken over the UTF-8 bytes, which is how the payload is stored in the QR byte segment.
 */


const COMMON_CHARSET = '^[\\x20-\\x7E]*$';

/**
 * Who a QR names when the invoice's own payee cannot be carried: the ministry system's collection
 * account and its name, which settle the payment by its bill number and reference label.
 */
const FallbackPayeeSchema = Type.Object(
  {
    merchantId: Type.String({ minLength: 1, maxLength: 40, pattern: '^[\\x21-\\x7E]+$' }),
    name: Type.String({ minLength: 1, maxLength: 25, pattern: '^[\\x21-\\x7E]([\\x20-\\x7E]*[\\x21-\\x7E])?$' }),
  },
  { additionalProperties: false },
);

export const QrSchemeConfigSchema = Type.Object(
  {
    merchantCity: Type.String({ minLength: 1, maxLength: 15, pattern: COMMON_CHARSET }),
    mcc: Type.String({ pattern: '^[0-9]{4}$' }),
    qrpay: Type.Object(
      {
        aid: Type.String({ pattern: '^(?:[0-9A-F]{2}){5,16}$' }),
        merchantAccountPrefix: Type.String({ maxLength: 20, pattern: COMMON_CHARSET }),
      },
      { additionalProperties: false },
    ),
    govstd: Type.Object(
      {
        guid: Type.String({ minLength: 1, maxLength: 32, pattern: '^[\\x21-\\x7E]+$' }),
        merchantAccountPrefix: Type.String({ maxLength: 20, pattern: COMMON_CHARSET }),
      },
      { additionalProperties: false },
    ),
    fallbackPayees: Type.Object(
      { mof: FallbackPayeeSchema, etax: FallbackPayeeSchema, police: FallbackPayeeSchema },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

export type QrSchemeConfig = Static<typeof QrSchemeConfigSchema>;

export interface EmvcoPayloadInput {
  standard: QrStandard;
  scheme: QrSchemeConfig;
  merchantAccount: string;
  /** Decimal string in tugrik, at most 2 decimals, e.g. "12000" or "12000.50". */
  amount: string;
  payeeName: string;
  city: string;
  billNumber: string;
  referenceLabel: string;
  mcc?: string;
  payeeNameLocal?: string;
}

export class EmvcoPayloadError extends Error {
  override name = 'EmvcoPayloadError';
}

const MERCHANT_ACCOUNT_TAG: Record<QrStandard, string> = { qrpay: '27', govstd: '26' };
const MAX_TLV_VALUE = 99;
const TLV_HEADER = 4;
const MAX_AMOUNT = 13;
const MAX_PAYEE_NAME = 25;
const MAX_CITY = 15;
const MAX_ADDITIONAL_FIELD = 25;
const CRC_TAG_AND_LENGTH = '6304';

export function buildEmvcoPayload(input: EmvcoPayloadInput): string {
  const body =
    tlv('00', '01') +
    tlv('01', '12') +
    merchantAccountTemplate(input) +
    tlv('52', checkedMcc(input.mcc ?? input.scheme.mcc)) +
    tlv('53', '496') +
    tlv('54', formatEmvcoAmount(input.amount)) +
    tlv('58', 'MN') +
    tlv('59', displayText('payee name', transliterateMongolian(input.payeeName), MAX_PAYEE_NAME)) +
    tlv('60', displayText('city', transliterateMongolian(input.city), MAX_CITY)) +
    additionalDataTemplate(input) +
    languageTemplate(input.payeeNameLocal);
  const signed = body + CRC_TAG_AND_LENGTH;
  return signed + crc16CcittFalse(signed);
}

function merchantAccountTemplate(input: EmvcoPayloadInput): string {
  const { standard, scheme } = input;
  const schemeId = schemeIdOf(scheme, standard);
  const account = identifier('merchant account', input.merchantAccount, merchantAccountRoom(scheme, standard));
  return tlv(MERCHANT_ACCOUNT_TAG[standard], tlv('00', schemeId) + tlv('01', account));
}

function schemeIdOf(scheme: QrSchemeConfig, standard: QrStandard): string {
  return standard === 'qrpay' ? scheme.qrpay.aid : scheme.govstd.guid;
}

/** The merchant account template holds 99 characters: the scheme id's sub-tag, then the account's. */
export function merchantAccountRoom(scheme: QrSchemeConfig, standard: QrStandard): number {
  return MAX_TLV_VALUE - TLV_HEADER - codePointLength(schemeIdOf(scheme, standard)) - TLV_HEADER;
}

/** True when the payload can carry this merchant account unchanged. */
export function fitsMerchantAccount(scheme: QrSchemeConfig, standard: QrStandard, account: string): boolean {
  return account !== '' && isCommonCharset(account) && account.length <= merchantAccountRoom(scheme, standard);
}

/** The payee name as tag 59 carries it; empty when nothing of it survives transliteration. */
export function payeeNameShown(payeeName: string): string {
  return truncate(transliterateMongolian(payeeName), MAX_PAYEE_NAME);
}

function additionalDataTemplate(input: EmvcoPayloadInput): string {
  const bill = identifier('bill number', input.billNumber, MAX_ADDITIONAL_FIELD);
  const reference = identifier('reference label', input.referenceLabel, MAX_ADDITIONAL_FIELD);
  return tlv('62', tlv('01', bill) + tlv('05', reference));
}

/**
 * Tag 64 keeps the Cyrillic name for apps that can show it; tag 59 must stay ASCII. Control,
 * format and unpaired surrogate characters are dropped (a scanner would show or act on them), and
 * a name that is then plain ASCII adds nothing to tag 59, so the template is left out.
 */
function languageTemplate(payeeNameLocal: string | undefined): string {
  if (payeeNameLocal === undefined) return '';
  const visible = payeeNameLocal.normalize('NFC').replace(INVISIBLE, '');
  const name = truncate(collapseSpaces(visible), MAX_PAYEE_NAME);
  if (isCommonCharset(name)) return '';
  return tlv('64', tlv('00', 'MN') + tlv('01', name));
}

const INVISIBLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}]/gu;

/**
 * Amount rule (tag 54): the integer part without leading zeros, then the fraction only when it
 * is not zero, without trailing zeros: "12000.00" -> "12000", "12000.50" -> "12000.5". Works on
 * the string; never converts to a float.
 */
export function formatEmvcoAmount(amount: string): string {
  if (!/^(0|[1-9]\d*)(\.\d{1,2})?$/.test(amount)) {
    throw new EmvcoPayloadError(`amount "${amount}" is not a decimal with at most 2 decimals`);
  }
  const canonical = canonicalAmount(amount);
  if (canonical === '0') throw new EmvcoPayloadError('amount must be positive');
  if (canonical.length > MAX_AMOUNT) {
    throw new EmvcoPayloadError(`amount "${canonical}" exceeds ${MAX_AMOUNT} characters`);
  }
  return canonical;
}

function checkedMcc(mcc: string): string {
  if (!/^\d{4}$/.test(mcc)) throw new EmvcoPayloadError(`MCC "${mcc}" must be 4 digits`);
  return mcc;
}

/** Identifiers are never shortened: a truncated account or bill number would misroute money. */
function identifier(label: string, value: string, max: number): string {
  if (value === '' || !isCommonCharset(value)) {
    throw new EmvcoPayloadError(`${label} must be non-empty printable ASCII`);
  }
  if (value.length > max) {
    throw new EmvcoPayloadError(`${label} is ${value.length} characters, max ${max}`);
  }
  return value;
}

/** Names are display-only, so they are shortened to fit rather than failing the payment. */
function displayText(label: string, value: string, max: number): string {
  const text = truncate(value, max);
  if (text === '') throw new EmvcoPayloadError(`${label} is empty after transliteration`);
  return text;
}

function tlv(tag: string, value: string): string {
  const length = codePointLength(value);
  if (length > MAX_TLV_VALUE) {
    throw new EmvcoPayloadError(`tag ${tag} value is ${length} characters, max ${MAX_TLV_VALUE}`);
  }
  return tag + String(length).padStart(2, '0') + value;
}

function truncate(text: string, max: number): string {
  return Array.from(text).slice(0, max).join('').trimEnd();
}

function codePointLength(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

function isCommonCharset(text: string): boolean {
  return /^[\x20-\x7E]*$/.test(text);
}

function collapseSpaces(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * Mongolian Cyrillic to ASCII Latin. Follows the passport convention (Ө and Ү both become U)
 * because the EMVCo common character set has no Ö or Ü.
 */
const CYRILLIC_TO_LATIN: Readonly<Record<string, string>> = {
  а: 'a', б: 'b', в: 'v', г: 'g', д: 'd', е: 'ye', ё: 'yo', ж: 'j', з: 'z', и: 'i', й: 'i',
  к: 'k', л: 'l', м: 'm', н: 'n', о: 'o', ө: 'u', п: 'p', р: 'r', с: 's', т: 't', у: 'u',
  ү: 'u', ф: 'f', х: 'kh', ц: 'ts', ч: 'ch', ш: 'sh', щ: 'sh', ъ: 'i', ы: 'y', ь: 'i',
  э: 'e', ю: 'yu', я: 'ya',
};

export function transliterateMongolian(text: string): string {
  const chars = Array.from(text.normalize('NFC'));
  const latin = chars.map((char, i) => transliterateChar(char, chars[i - 1], chars[i + 1]));
  // NFKD, then dropping what is left outside ASCII, turns Latin diacritics (é) into plain letters.
  const ascii = latin.join('').normalize('NFKD').replace(/[^\x20-\x7E\s]/g, '');
  return collapseSpaces(ascii);
}

function transliterateChar(
  char: string,
  prev: string | undefined,
  next: string | undefined,
): string {
  const lower = char.toLowerCase();
  const latin = CYRILLIC_TO_LATIN[lower];
  if (latin === undefined) return char;
  if (lower === char) return latin;
  // In an all-capitals word digraphs stay capitals ("ХААН" -> "KHAAN"), else "Хаан" -> "Khaan".
  const allCaps = isUpper(next) || (isUpper(prev) && !isLower(next));
  return allCaps ? latin.toUpperCase() : latin.charAt(0).toUpperCase() + latin.slice(1);
}

function isUpper(char: string | undefined): boolean {
  return char !== undefined && char !== char.toLowerCase();
}

function isLower(char: string | undefined): boolean {
  return char !== undefined && char !== char.toUpperCase();
}

/** Flat parse of one TLV level; call it again on a template's value to read its sub-tags. */
export function parseEmvcoTlv(text: string): Record<string, string> {
  const chars = Array.from(text);
  const fields: Record<string, string> = {};
  let at = 0;
  while (at < chars.length) {
    const tag = chars.slice(at, at + 2).join('');
    const length = chars.slice(at + 2, at + 4).join('');
    if (!/^\d{2}$/.test(tag) || !/^\d{2}$/.test(length)) {
      throw new EmvcoPayloadError(`malformed TLV header at character ${at}`);
    }
    const end = at + 4 + Number(length);
    if (end > chars.length) throw new EmvcoPayloadError(`tag ${tag} runs past the end`);
    if (tag in fields) throw new EmvcoPayloadError(`tag ${tag} appears twice`);
    fields[tag] = chars.slice(at + 4, end).join('');
    at = end;
  }
  return fields;
}

/** True when the payload parses, ends with tag 63, and its CRC matches. */
export function verifyEmvcoCrc(text: string): boolean {
  const match = /6304([0-9A-F]{4})$/.exec(text);
  if (match === null) return false;
  let fields: Record<string, string>;
  try {
    fields = parseEmvcoTlv(text);
  } catch {
    return false;
  }
  // The suffix must be the tag 63 object itself, not the tail of another tag's value.
  if (fields['63'] !== match[1]) return false;
  return crc16CcittFalse(text.slice(0, -4)) === match[1];
}
