import { describe, expect, it } from 'vitest';
import { generateApiKey, keyEnvironment, keyPrefix } from '../../src/domain/api-key.js';

describe('API keys', () => {
  it('keeps only the environment tag and 4 random characters as the prefix, even when the random part holds "_"', () => {
    expect(keyPrefix('gpk_sandbox_ab_c_defghijklmnopqrstuvwxyz012345_67')).toBe('gpk_sandbox_ab_c');
    expect(keyPrefix('gpk_live_Xy__defghijklmnopqrstuvwxyz0123456789_')).toBe('gpk_live_Xy__');
  });

  it('generates keys of the environment they are for', () => {
    for (let i = 0; i < 200; i++) {
      const key = generateApiKey(i % 2 ? 'production' : 'sandbox');
      expect(keyEnvironment(key)).toBe(i % 2 ? 'production' : 'sandbox');
      expect(keyPrefix(key)).toHaveLength(i % 2 ? 13 : 16);
    }
  });
});
