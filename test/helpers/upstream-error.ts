import { expect } from 'vitest';
import { UpstreamError } from '../../src/domain/ministry.port.js';

/** The UpstreamError `promise` rejects with; fails the test when it resolves or rejects with anything else. */
export async function upstreamError(promise: Promise<unknown>): Promise<UpstreamError> {
  const error = await promise.then(
    () => null,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(UpstreamError);
  return error as UpstreamError;
}
