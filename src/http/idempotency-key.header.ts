import { InvalidRequestError } from '../domain/errors.js';

/**
 * The request's idempotency key: `X-Idempotency-Key`, or `Idempotency-Key` (the IETF HTTPAPI
 * draft's name, which most HTTP clients send), with one meaning. Both with different values leave
 * the request's intent unknown, so it is refused rather than one of them guessed.
 */
export function idempotencyKeyOf(headers: { 'x-idempotency-key'?: string; 'idempotency-key'?: string }): string | undefined {
  const prefixed = headers['x-idempotency-key'];
  const plain = headers['idempotency-key'];
  if (prefixed !== undefined && plain !== undefined && prefixed !== plain) {
    throw new InvalidRequestError(['Idempotency-Key and X-Idempotency-Key must be equal when both are sent'], '/x-idempotency-key');
  }
  return prefixed ?? plain;
}
