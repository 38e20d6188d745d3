import { describe, expect, it } from 'vitest';
import { maskRegister } from '../../src/domain/register-mask.js';

describe('maskRegister', () => {
  it("keeps a citizen's register letters and its last two digits", () => {
    expect(maskRegister('УБ99887766')).toBe('УБ******66');
    expect(maskRegister(' 1234567 ')).toBe('12***67');
  });

  it('shows only the last character of a short register, and nothing of an empty one', () => {
    expect(maskRegister('ABCD')).toBe('***D');
    expect(maskRegister('A')).toBe('A');
    expect(maskRegister('')).toBe('');
  });
});
