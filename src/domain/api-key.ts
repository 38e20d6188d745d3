import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AppEnv, KeyEnvironment } from './vocabulary.js';


const PREFIX: Record<KeyEnvironment, string> = { sandbox: 'gpk_sandbox_', production: 'gpk_live_' };
const KEY_FORMAT = /^gpk_(sandbox|live)_[A-Za-z0-9_-]{32,64}$/;

export function generateApiKey(environment: KeyEnvironment): string {
  return PREFIX[environment] + randomBytes(24).toString('base64url');
}

/** The environment a key belongs to, or null when it is not a key at all. */
export function keyEnvironment(key: string): KeyEnvironment | null {
  const match = KEY_FORMAT.exec(key);
  if (!match) return null;
  return match[1] === 'live' ? 'production' : 'sandbox';
}

/** Keys carry 192 random bits, so a fast hash is enough; no salt needed for lookup by hash. */
export function hashApiKey(key: string): string {
  // One-shot crypto.hash: every request hashes its key, and it skips the Hash object createHash builds.
  return hash('sha256', key, 'hex');
}

export function hashesEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The environment tag plus 4 random characters; the random part may itself contain `_`. */
export function keyPrefix(key: string): string {
  return key.slice(0, key.indexOf('_', 'gpk_'.length) + 5);
}

/** `local` and `sandbox` deployments take sandbox keys; `production` only live ones. */
export function acceptedKeyEnvironment(appEnv: AppEnv): KeyEnvironment {
  return appEnv === 'production' ? 'production' : 'sandbox';
}
