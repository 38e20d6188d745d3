/* The console's pure helpers: how an audit entry's change and a partner's rate limits read, and which row confirmation is armed. */
import type { AuditEntryView } from '../../schemas/back-office.schema.js';
import type { AuditAction } from '../../domain/vocabulary.js';
import { compactJson, formatLocalTime } from '../page-ui/page-format.js';

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** A recorded value as the operator reads it: ∅ for none, instants in local time, objects as JSON. */
export function auditValue(value: unknown): string {
  if (value === null || value === undefined) return '∅';
  if (typeof value === 'object') return compactJson(value);
  const text = String(value);
  return ISO_INSTANT.test(text) ? formatLocalTime(text) : text;
}

/**
 * What an entry recorded with only one side did. The side alone does not tell: a key rotation or
 * a reconciliation run records no "before" either, and neither created anything.
 */
const ONE_SIDED: Partial<Record<AuditAction, string>> = {
  'partner.create': 'created',
  'partner.rotate_key': 'key rotated',
  'reconciliation.run': 'ran',
};

export interface FieldChange {
  key: string;
  before: string;
  after: string;
}

export type AuditChange =
  | { kind: 'changes'; changes: FieldChange[] }
  | { kind: 'summary'; label: string; fields: string }
  | { kind: 'none' };

export function auditChange(entry: Pick<AuditEntryView, 'action' | 'before' | 'after'>): AuditChange {
  const { before, after } = entry;
  if (before && after) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])];
    const changed = keys.filter((k) => compactJson(before[k]) !== compactJson(after[k]));
    return { kind: 'changes', changes: changed.map((key) => ({ key, before: auditValue(before[key]), after: auditValue(after[key]) })) };
  }
  const side = after ?? before;
  if (!side) return { kind: 'none' };
  const fields = Object.entries(side).map(([k, v]) => `${k}=${auditValue(v)}`).join(' ');
  return { kind: 'summary', label: after ? (ONE_SIDED[entry.action] ?? 'recorded') : 'removed', fields };
}

/** A partner's three limits: field, unit and what the editor's box is for. */
export const LIMIT_FIELDS = [
  ['perSecond', '/s', 'per second'],
  ['perMinute', '/min', 'per minute'],
  ['perHour', '/h', 'per hour'],
] as const;

/** "20/s · 600/min · 10000/h", or "default" for a partner on the configured limits. */
export function limitsText(limits: { perSecond: number; perMinute: number; perHour: number } | null): string {
  return limits ? LIMIT_FIELDS.map(([key, unit]) => `${limits[key]}${unit}`).join(' · ') : 'default';
}

/**
 * The one row confirmation armed at a time: arming another disarms it, so a second click can
 * only ever confirm the action the operator last asked for.
 */
export function createArming() {
  let armed: (() => void) | null = null;
  return {
    arm(disarm: () => void): void {
      const previous = armed;
      armed = disarm;
      if (previous && previous !== disarm) previous();
    },
    /** Forgets `disarm` if it is the armed one (its confirmation was used, or it ran out). */
    release(disarm: () => void): void {
      if (armed === disarm) armed = null;
    },
  };
}
