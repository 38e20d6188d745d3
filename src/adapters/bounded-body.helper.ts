import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';

/** An upstream answer larger than its caller's bound: nothing past the bound was kept. */
export class ResponseTooLargeError extends Error {
  override name = 'ResponseTooLargeError';

  constructor(
    readonly maxBytes: number,
    /** What gave it away: the announced Content-Length, or the bytes read when the bound was crossed. */
    readonly seenBytes: number,
    readonly announced: boolean,
  ) {
    super(announced ? `answer announces ${seenBytes} bytes, more than the ${maxBytes} allowed` : `answer exceeds the ${maxBytes} bytes allowed`);
  }
}

function announcedLength(headers: IncomingHttpHeaders): number | null {
  const raw = headers['content-length'];
  if (typeof raw !== 'string') return null;
  const n = Number(raw);
  return Number.isSafeInteger(n) && n >= 0 ? n : null;
}

const BOM = [0xef, 0xbb, 0xbf];

interface BoundedResponse {
  headers: IncomingHttpHeaders;
  body: Readable;
}

/**
 * Hands each chunk to `keep` as it arrives and counts it: a Content-Length above the bound is
 * refused before reading, and a body that grows past it (an endless chunked answer included) is
 * destroyed at the chunk that crosses it, which closes the connection instead of draining the rest.
 */
async function consumeBounded(response: BoundedResponse, maxBytes: number, keep: (chunk: Buffer) => void): Promise<number> {
  const { body } = response;
  const announced = announcedLength(response.headers);
  if (announced !== null && announced > maxBytes) {
    body.destroy();
    throw new ResponseTooLargeError(maxBytes, announced, true);
  }
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      // Leaving the loop would destroy it too; done here so the socket goes before the error travels.
      body.destroy();
      throw new ResponseTooLargeError(maxBytes, size, false);
    }
    keep(chunk);
  }
  return size;
}

/**
 * The whole body as UTF-8 text, never holding more than `maxBytes` of it (see consumeBounded). A
 * leading BOM is dropped, as undici's `text()` does.
 */
export async function readBoundedText(response: BoundedResponse, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  const size = await consumeBounded(response, maxBytes, (chunk) => chunks.push(chunk));
  const buffer = Buffer.concat(chunks, size);
  const start = buffer.length > 2 && BOM.every((byte, i) => buffer[i] === byte) ? BOM.length : 0;
  return buffer.toString('utf8', start);
}

/** Reads a body whose content the caller does not use, holding none of it; past `maxBytes` it throws like readBoundedText. */
export async function discardBounded(response: BoundedResponse, maxBytes: number): Promise<void> {
  await consumeBounded(response, maxBytes, () => undefined);
}
