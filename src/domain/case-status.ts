import { movesOf, type Move, type Transition } from './transition-table.js';
import type { CaseStatus, CaseType } from './vocabulary.js';

/**
 * What can happen to a case: an operator takes it, its due time passes unanswered, it is answered
 * (by an operator, or by the service when its fresh check found the payment confirmed).
 */
export type CaseTrigger = 'taken' | 'due_passed' | 'answered';

export type CaseTransition = Transition<CaseStatus, CaseTrigger>;

/**
 * Every move of a case. Taking an escalated case leaves it escalated (its breach stays on record):
 * the operator is recorded as its owner without a move.
 */
export const CASE_TRANSITIONS: readonly CaseTransition[] = [
  { from: 'open', event: 'taken', to: 'in_progress' },
  { from: 'open', event: 'due_passed', to: 'escalated' },
  { from: 'in_progress', event: 'due_passed', to: 'escalated' },
  { from: 'open', event: 'answered', to: 'resolved' },
  { from: 'in_progress', event: 'answered', to: 'resolved' },
  { from: 'escalated', event: 'answered', to: 'resolved' },
];

export type CaseMove = Move<CaseStatus, CaseTrigger>;

export const caseMove: (trigger: CaseTrigger) => CaseMove = movesOf('case', CASE_TRANSITIONS);

/** Hours to answer each type of case (CASE_TURNAROUND_HOURS): a day for a payment not yet seen by the ministry, five for the rest. */
export const DEFAULT_CASE_TURNAROUND_HOURS: Readonly<Record<CaseType, number>> = {
  paid_not_updated: 24,
  paid_twice: 120,
  wrong_amount: 120,
  canceled_not_reversed: 120,
  other: 120,
};

const HOUR_MS = 3_600_000;

/** When a case of `type` opened at `openedAt` is due. */
export function caseDueAt(type: CaseType, openedAt: Date, turnaroundHours: Readonly<Record<CaseType, number>>): Date {
  return new Date(openedAt.getTime() + turnaroundHours[type] * HOUR_MS);
}
