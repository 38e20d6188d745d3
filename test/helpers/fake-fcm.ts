import { createVerify, generateKeyPairSync } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FCM_SCOPE } from '../../src/adapters/fcm-access-token.client.js';

export interface FcmMessage {
  token: string;
  authorization: string;
  data: Record<string, string>;
}

export interface FakeFcm {
  endpoint: string;
  /** Messages FCM took (answered 200 or a scripted status), in order. */
  received: FcmMessage[];
  /** Sends refused with 401 for an unknown or expired access token. */
  unauthorized: { authorization: string }[];
  /** Statuses to answer the next messages with (then 200), for a sender's retries. */
  script: number[];
  /** Access tokens the OAuth endpoint minted, in order. */
  minted: string[];
  /** How long the next minted tokens last, in seconds, as the token endpoint announces (`expires_in`). */
  expiresInSeconds: number;
  /** Makes every token minted so far expire now, earlier than announced (as a revoked key would). */
  expireAll(): void;
  /** A service account key file, as Firebase issues it, whose token_uri is this fake's. */
  serviceAccountFile(projectId: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * A local stand-in for FCM HTTP v1 and Google's OAuth token endpoint, judged on `now` (the test
 * context's clock): `/token` checks the service account's RS256 assertion and mints access tokens
 * that expire `expiresInSeconds` later; `messages:send` answers 401 to an unknown or expired token
 * and otherwise records the message and answers with the scripted status, then 200.
 */
export async function startFakeFcm(opts: { now: () => Date; staticTokens?: string[] }): Promise<FakeFcm> {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const clientEmail = 'push-sender@demo-project.iam.gserviceaccount.com';
  const valid = new Map<string, number>((opts.staticTokens ?? []).map((t) => [t, Number.POSITIVE_INFINITY]));
  const state: Omit<FakeFcm, 'endpoint' | 'serviceAccountFile' | 'close' | 'expireAll'> = { received: [], unauthorized: [], script: [], minted: [], expiresInSeconds: 3600 };
  let endpoint = '';

  function assertionProblem(assertion: string): string | null {
    const [header = '', claims = '', signature = ''] = assertion.split('.');
    const ok = createVerify('RSA-SHA256').update(`${header}.${claims}`).verify(publicKey, Buffer.from(signature, 'base64url'));
    if (!ok) return 'bad signature';
    const c = JSON.parse(Buffer.from(claims, 'base64url').toString('utf8')) as { iss?: string; scope?: string; aud?: string; iat?: number; exp?: number };
    const nowS = Math.floor(opts.now().getTime() / 1000);
    if (c.iss !== clientEmail || c.scope !== FCM_SCOPE || c.aud !== `${endpoint}/token`) return 'wrong claims';
    if (typeof c.iat !== 'number' || typeof c.exp !== 'number' || c.exp - c.iat > 3600 || c.exp <= nowS || c.iat > nowS + 60) return 'wrong times';
    return null;
  }

  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.url === '/token') {
        const form = new URLSearchParams(body);
        const problem = form.get('grant_type') === 'urn:ietf:params:oauth:grant-type:jwt-bearer' ? assertionProblem(form.get('assertion') ?? '') : 'wrong grant';
        if (problem) return res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'invalid_grant', error_description: problem }));
        const token = `ya29.fake-${state.minted.length + 1}`;
        state.minted.push(token);
        valid.set(token, opts.now().getTime() + state.expiresInSeconds * 1000);
        return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: token, expires_in: state.expiresInSeconds, token_type: 'Bearer' }));
      }
      const authorization = req.headers.authorization ?? '';
      const expiresAt = valid.get(authorization.replace(/^Bearer /, ''));
      if (expiresAt === undefined || expiresAt <= opts.now().getTime()) {
        state.unauthorized.push({ authorization });
        return res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"code":401,"status":"UNAUTHENTICATED"}}');
      }
      const { message } = JSON.parse(body) as { message: { token: string; data: Record<string, string> } };
      state.received.push({ token: message.token, authorization, data: message.data });
      const status = state.script.shift() ?? 200;
      res.writeHead(status, { 'content-type': 'application/json' }).end(status === 200 ? '{"name":"projects/demo/messages/1"}' : '{"error":{}}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return Object.assign(state, {
    endpoint,
    expireAll() {
      for (const token of state.minted) valid.set(token, opts.now().getTime());
    },
    async serviceAccountFile(projectId: string) {
      const dir = await mkdtemp(join(tmpdir(), 'fcm-key-'));
      const path = join(dir, 'service-account.json');
      const key = {
        type: 'service_account',
        project_id: projectId,
        private_key_id: 'fake-key-id',
        private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
        client_email: clientEmail,
        client_id: '100000000000000000000',
        token_uri: `${endpoint}/token`,
      };
      await writeFile(path, JSON.stringify(key, null, 2));
      return path;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}
