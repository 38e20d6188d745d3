import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * AES-256-GCM for secrets kept at rest (webhook secrets). The key is derived from the configured
 * key with HKDF, so the configured value can be any long string; the version prefix leaves room
 * for a key rotation later.
 */
export function createSecretCipher(configuredKey: string) {
  const key = Buffer.from(hkdfSync('sha256', configuredKey, 'gov-payment-channel', 'webhook-secret/aes-256-gcm', 32));
  return {
    encrypt(plaintext: string): string {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return `${VERSION}:${Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64')}`;
    },
    decrypt(stored: string): string {
      const [version, payload] = stored.split(':');
      if (version !== VERSION || !payload) throw new Error('unknown secret format');
      const raw = Buffer.from(payload, 'base64');
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    },
  };
}

export type SecretCipher = ReturnType<typeof createSecretCipher>;
