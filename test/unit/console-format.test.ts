import { describe, expect, it } from 'vitest';
import { auditChange, auditValue, createArming } from '../../src/http/console/console.format.js';

describe('audit entries in the console', () => {
  it('describes a key rotation as one, not as a creation', () => {
    const change = auditChange({ action: 'partner.rotate_key', before: null, after: { environment: 'sandbox' } });
    expect(change).toEqual({ kind: 'summary', label: 'key rotated', fields: 'environment=sandbox' });
    expect(auditChange({ action: 'reconciliation.run', before: null, after: { financeDay: '2025-01-01' } })).toMatchObject({ label: 'ran' });
    expect(auditChange({ action: 'partner.create', before: null, after: { name: 'X Bank', active: true } })).toEqual({ kind: 'summary', label: 'created', fields: 'name=X Bank active=true' });
    expect(auditChange({ action: 'partner.update', before: { active: true }, after: null })).toMatchObject({ label: 'removed' });
  });

  it('lists only the fields a change changed', () => {
    expect(auditChange({ action: 'delivery.redeliver', before: { status: 'delivered', attempts: 1 }, after: { status: 'pending', attempts: 1 } })).toEqual({
      kind: 'changes',
      changes: [{ key: 'status', before: 'delivered', after: 'pending' }],
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
