import { describe, expect, it } from 'vitest';
import { auditChange, auditValue, createArming, limitsText } from '../../src/http/console/console.format.js';

describe('audit entries in the console', () => {
  it('describes a key rotation as one, not as a creation', () => {
    const change = auditChange({ action: 'partner.rotate_key', before: null, after: { environment: 'sandbox' } });
    expect(change).toEqual({ kind: 'summary', label: 'key rotated', fields: 'environment=sandbox' });
    expect(auditChange({ action: 'reconciliation.run', before: null, after: { financeDay: '2025-01-01' } })).toMatchObject({ label: 'ran' });
    expect(auditChange({ action: 'partner.create', before: null, after: { name: 'X Bank', active: true } })).toEqual({ kind: 'summary', label: 'created', fields: 'name=X Bank active=true' });
    expect(auditChange({ action: 'partner.update', before: { active: true }, after: null })).toMatchObject({ label: 'removed' });
  });

  it('lists only the fields a change changed', () => {
    expect(auditChange({ action: 'delivery.redeliver', before: { status: 'succeeded', attempts: 1 }, after: { status: 'pending', attempts: 1 } })).toEqual({
      kind: 'changes',
      changes: [{ key: 'status', before: 'succeeded', after: 'pending' }],
    });
    expect(auditChange({ action: 'partner.update', before: null, after: null })).toEqual({ kind: 'none' });
    expect(auditValue(null)).toBe('∅');
    expect(auditValue({ a: [1] })).toBe('{"a":[1]}');
    expect(auditValue('2025-01-02T03:04:05.000Z')).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
  });
});

describe('row confirmations', () => {
  it('keeps one armed at a time: arming another disarms the first', () => {
    const arming = createArming();
    const disarmed: string[] = [];
    const rotate = () => disarmed.push('rotate');
    const deactivate = () => disarmed.push('deactivate');
    arming.arm(rotate);
    arming.arm(rotate);
    expect(disarmed).toEqual([]);
    arming.arm(deactivate);
    expect(disarmed).toEqual(['rotate']);
    // A used or expired confirmation is forgotten: arming the next one disarms nothing more.
    arming.release(deactivate);
    arming.arm(rotate);
    expect(disarmed).toEqual(['rotate']);
  });
});

describe("a partner's rate limits in the console", () => {
  it('reads its own limits per window, and "default" for none', () => {
    expect(limitsText({ perSecond: 20, perMinute: 600, perHour: 10000 })).toBe('20/s · 600/min · 10000/h');
    expect(limitsText(null)).toBe('default');
  });

  it('shows a change of limits in the audit log as one field, before and after', () => {
    const limits = { perSecond: 7, perMinute: 100, perHour: 2000 };
    expect(auditChange({ action: 'partner.update', before: { active: true, rateLimits: null }, after: { active: true, rateLimits: limits } })).toEqual({
      kind: 'changes',
      changes: [{ key: 'rateLimits', before: '∅', after: '{"perSecond":7,"perMinute":100,"perHour":2000}' }],
    });
  });
});
