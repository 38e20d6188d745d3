import { randomFillSync } from 'node:crypto';
import { isValidSpanId, isValidTraceId } from '../../domain/trace-context.js';

const POOL_BYTES = 4096;

/**
 * Random trace and span ids cut from one buffer refilled a page at a time: a request costs the
 * hex encoding of the bytes it takes, not a call into the random source of its own.
 */
export function createTraceIds() {
  const pool = Buffer.allocUnsafe(POOL_BYTES);
  let offset = POOL_BYTES;

  function take(bytes: number): string {
    if (offset + bytes > POOL_BYTES) {
      randomFillSync(pool);
      offset = 0;
    }
    const hex = pool.toString('hex', offset, offset + bytes);
    offset += bytes;
    return hex;
  }

  return {
    traceId(): string {
      let id = take(16);
      while (!isValidTraceId(id)) id = take(16);
      return id;
    },
    spanId(): string {
      let id = take(8);
      while (!isValidSpanId(id)) id = take(8);
      return id;
    },
  };
}

export type TraceIds = ReturnType<typeof createTraceIds>;
