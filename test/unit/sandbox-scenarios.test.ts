import { describe, expect, it } from 'vitest';
import { SANDBOX_SCENARIOS, SCENARIO_DESCRIPTIONS, planScenario } from '../../src/domain/sandbox-scenarios.js';

describe('sandbox scenario plans', () => {
  it('describe every scenario', () => {
    expect(Object.keys(SCENARIO_DESCRIPTIONS).sort()).toEqual([...SANDBOX_SCENARIOS].sort());
  });

  it('default the delays and windows, and take the given ones', () => {
    expect(planScenario('approve-later', {}).behaviour).toEqual({ approveAfterSeconds: 30 });
    expect(planScenario('approve-later', { delaySeconds: 5 }).behaviour).toEqual({ approveAfterSeconds: 5 });
    expect(planScenario('ministry-unavailable', {}).behaviour).toEqual({ unavailableSeconds: 30 });
    expect(planScenario('ministry-unavailable', { durationSeconds: 7 }).behaviour).toEqual({ unavailableSeconds: 7 });
    expect(planScenario('fail-after-submit', {}).behaviour?.failAfterSeconds).toBeLessThan(2);
  });

  it('bound a never-approved payment by delaySeconds only when given', () => {
    expect(planScenario('never-approve', {})).toMatchObject({ behaviour: { neverApprove: true }, paymentExpiryMs: null });
    expect(planScenario('never-approve', { delaySeconds: 4 }).paymentExpiryMs).toBe(4000);
    expect(planScenario('approve-later', { delaySeconds: 4 }).paymentExpiryMs).toBeNull();
  });

  it('shape the invoice for the ministry', () => {
    expect(planScenario('reject', {})).toMatchObject({ rejectPayment: true, status: 'open' });
    expect(planScenario('partial', {})).toMatchObject({ allowPartial: true });
    expect(planScenario('linked', {})).toMatchObject({ linked: true });
    expect(planScenario('already-paid', {})).toMatchObject({ status: 'paid', behaviour: null });
    expect(planScenario('approve', {})).toEqual({ status: 'open', rejectPayment: false, allowPartial: false, linked: false, behaviour: null, paymentExpiryMs: null });
  });
});
