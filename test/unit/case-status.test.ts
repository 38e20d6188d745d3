import { describe, expect, it } from 'vitest';
import { CASE_TRANSITIONS, caseDueAt, caseMove, DEFAULT_CASE_TURNAROUND_HOURS } from '../../src/domain/case-status.js';
import { CASE_STATUSES, UNRESOLVED_CASE_STATUSES } from '../../src/domain/vocabulary.js';

describe('case transition table', () => {
  it('answers a case from every unresolved status, and nothing leaves resolved', () => {
    expect(caseMove('answered').from.sort()).toEqual([...UNRESOLVED_CASE_STATUSES].sort());
    expect(CASE_TRANSITIONS.filter((t) => t.from === 'resolved')).toEqual([]);
  });

  it('escalates an open or taken case past its due time, and taking moves only an open one', () => {
    expect(caseMove('due_passed')).toEqual({ event: 'due_passed', from: ['open', 'in_progress'], to: 'escalated' });
    expect(caseMove('taken')).toEqual({ event: 'taken', from: ['open'], to: 'in_progress' });
  });

  it('reaches every status', () => {
    const reached = new Set(['open', ...CASE_TRANSITIONS.map((t) => t.to)]);
    expect([...reached].sort()).toEqual([...CASE_STATUSES].sort());
  });
});

describe('a case due time', () => {
  it('counts the turnaround of its type from its opening', () => {
    const opened = new Date('2026-12-02T10:00:00.000Z');
    expect(caseDueAt('paid_not_updated', opened, DEFAULT_CASE_TURNAROUND_HOURS).toISOString()).toBe('2026-12-03T10:00:00.000Z');
    expect(caseDueAt('wrong_amount', opened, DEFAULT_CASE_TURNAROUND_HOURS).toISOString()).toBe('2026-12-07T10:00:00.000Z');
    expect(caseDueAt('other', opened, { ...DEFAULT_CASE_TURNAROUND_HOURS, other: 2 }).toISOString()).toBe('2026-12-02T12:00:00.000Z');
  });
});
