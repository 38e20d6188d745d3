import { generateKeyPairSync } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { readBoundedText, ResponseTooLargeError } from '../../src/adapters/bounded-body.helper.js';
import { serviceAccountAccessTokens, TOKEN_ANSWER_MAX_BYTES } from '../../src/adapters/fcm-access-token.client.js';
import { createFcmPushSender, FCM_ANSWER_MAX_BYTES } from '../../src/adapters/push-sender.js';
import { staticAccessToken } from '../../src/adapters/fcm-access-token.client.js';
import { systemClock } from '../../src/domain/clock.port.js';

/*
 * Issue 60: an upstream answer is read against a bound as its bytes arrive. Beside the ministry
 * client (test/integration/oversized-answers.test.ts), the FCM send and the OAuth token endpoint.
 */

const servers: { close(cb: () => void): unknown }[] = [];
afterAll(() => Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve())))));

const CHUNK = Buffer.alloc(64 * 1024, 'x');

/** Writes chunks until the client goes away; resolves `closed` with the bytes written by then. */
function endless(res: ServerResponse, closed: (written: number) => void): void {
  let written = 0;
  res.on('close', () => closed(written));
  const pump = () => {
    while (!res.destroyed && res.write(CHUNK)) written += CHUNK.length;
    if (!res.destroyed) res.once('drain', pump);
  };
  res.writeHead(200, { 'content-type': 'application/json' });
  res.write('{"name":"');
  pump();
}

async function serve(answer: (res: ServerResponse) => void): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => answer(res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** An endless answerer, and a promise of the bytes it had written when the client hung up. */
async function endlessServer(): Promise<{ url: string; hungUp: Promise<number> }> {
  let hungUp: (written: number) => void = () => undefined;
  const done = new Promise<number>((resolve) => (hungUp = resolve));
  const url = await serve((res) => endless(res, hungUp));
  return { url, hungUp: done };
}

describe('readBoundedText', () => {
  it('reads a body within the bound as UTF-8, a character split across chunks included, without a BOM', async () => {
    const text = 'Сангийн яам 😀';
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]);
    const url = await serve((res) => {
      res.writeHead(200);
      // Split inside the 4-byte emoji.
      res.write(bytes.subarray(0, bytes.length - 2));
      setTimeout(() => res.end(bytes.subarray(bytes.length - 2)), 20);
    });
    expect(await readBoundedText(await request(url), bytes.length)).toBe(text);
  });

  it('refuses a Content-Length above the bound before reading, and an endless body at the bound, hanging up', async () => {
    const announced = await serve((res) => {
      res.writeHead(200, { 'content-length': '10000000' });
      res.write('{');
    });
    await expect(readBoundedText(await request(announced), 1000)).rejects.toMatchObject({ announced: true, seenBytes: 10_000_000 });

    const { url, hungUp } = await endlessServer();
    const error = await readBoundedText(await request(url), 256 * 1024).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResponseTooLargeError);
    expect((error as ResponseTooLargeError).seenBytes).toBeLessThan(256 * 1024 + 2 * CHUNK.length);
    // Only what the socket buffers held past the bound was ever sent.
    expect(await hungUp).toBeLessThan(16 * 1024 * 1024);
  });
});

describe('the FCM sender', () => {
  it('stops reading an answer past its bound, hanging up, and judges the send by its status', async () => {
    const { url, hungUp } = await endlessServer();
    const sender = createFcmPushSender({ projectId: 'demo', tokens: staticAccessToken('tok'), endpoint: url }, 5000);
    // The endless server answers 200: a send FCM took is not failed (and so not pushed twice) for its body.
    await expect(sender.send('device', { title: 'Paid', body: 'Done' })).resolves.toBe('sent');
    expect(await hungUp).toBeLessThan(16 * 1024 * 1024 + FCM_ANSWER_MAX_BYTES);
  });
});

describe('the OAuth token endpoint', () => {
  it('fails a mint whose answer is past its bound', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const { url, hungUp } = await endlessServer();
    const account = { projectId: 'demo', clientEmail: 'push@demo.iam.gserviceaccount.com', privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), tokenUri: `${url}/token` };
    const tokens = serviceAccountAccessTokens(account, { timeoutMs: 5000, now: systemClock });
    await expect(tokens.token()).rejects.toThrow(`the OAuth token endpoint's answer exceeds the ${TOKEN_ANSWER_MAX_BYTES} bytes allowed`);
    expect(await hungUp).toBeLessThan(16 * 1024 * 1024);
  });

  it('still mints from an answer within it', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const url = await serve((res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: 'ya29.minted', expires_in: 3599, token_type: 'Bearer' })));
    const account = { projectId: 'demo', clientEmail: 'push@demo.iam.gserviceaccount.com', privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), tokenUri: `${url}/token` };
    expect(await serviceAccountAccessTokens(account, { timeoutMs: 5000, now: systemClock }).token()).toBe('ya29.minted');
  });
});
