import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Kysely } from 'kysely';
import { createTestContext, type TestContext } from '../helpers/test-context.js';
import { runCli } from '../helpers/cli.js';
import { up as upKeyPrefix } from '../../src/db/migrations/003-key-prefix.migration.js';

const run = promisify(execFile);

let ctx: TestContext;
let adminUrl: string;

beforeAll(async () => {
  ctx = await createTestContext();
  await ctx.admin.listen({ port: 0, host: '127.0.0.1' });
  const address = ctx.admin.server.address();
  adminUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});
afterAll(() => ctx.close());

const auth = () => ({ authorization: `Bearer ${ctx.config.adminToken}` });

interface Partner {
  id: string;
  name: string;
  qrStandard: string;
  environment: string;
  active: boolean;
  apiKey?: string;
}

describe('admin API', () => {
  it('refuses requests without the admin token', async () => {
    for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: ctx.config.adminToken }]) {
      const res = await ctx.admin.inject({ method: 'GET', url: '/admin/partners', headers });
      expect(res.statusCode).toBe(401);
    }
  });

  it('creates a partner with defaults and shows the key only at creation', async () => {
    const res = await ctx.admin.inject({ method: 'POST', url: '/admin/partners', headers: auth(), payload: { name: 'Khan Bank' } });
    expect(res.statusCode).toBe(201);
    const created = res.json<Partner>();
    expect(created).toMatchObject({ name: 'Khan Bank', qrStandard: 'qrpay', environment: 'sandbox', active: true });
    expect(created.apiKey).toMatch(/^gpk_sandbox_[A-Za-z0-9_-]{32}$/);
    const list = (await ctx.admin.inject({ method: 'GET', url: '/admin/partners', headers: auth() })).json<Partner[]>();
    const listed = list.find((p) => p.id === created.id);
    expect(listed).toMatchObject({ name: 'Khan Bank', active: true });
    expect(listed).not.toHaveProperty('apiKey');
    expect(JSON.stringify(list)).not.toContain(created.apiKey as string);
  });

  it('stores only a hash of the key', async () => {
    const p = await ctx.partner();
    const rows = await ctx.deps.db.selectFrom('api_keys').selectAll().where('partner_id', '=', p.id).execute();
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(p.apiKey);
    expect(rows[0]?.key_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('cuts prefixes stored by earlier releases back to the environment tag and 4 characters', async () => {
    const p = await ctx.partner();
    const legacy = 'gpk_sandbox_Ab_defghijklmnopqrstuvwxyz0123456_Z';
    await ctx.deps.db.updateTable('api_keys').set({ key_prefix: legacy }).where('partner_id', '=', p.id).execute();
    await upKeyPrefix(ctx.deps.db as unknown as Kysely<unknown>);
    const row = await ctx.deps.db.selectFrom('api_keys').select('key_prefix').where('partner_id', '=', p.id).executeTakeFirstOrThrow();
    expect(row.key_prefix).toBe('gpk_sandbox_Ab_d');
  });

  it('patches qrStandard and active, and 404s an unknown partner', async () => {
    const p = await ctx.partner();
    const res = await ctx.admin.inject({ method: 'PATCH', url: `/admin/partners/${p.id}`, headers: auth(), payload: { qrStandard: 'govstd', active: false } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: p.id, qrStandard: 'govstd', active: false });
    const missing = await ctx.admin.inject({ method: 'PATCH', url: '/admin/partners/0b8f7a4e-1c2d-4e5f-9a6b-7c8d9e0f1a2b', headers: auth(), payload: { active: true } });
    expect(missing.statusCode).toBe(404);
    const empty = await ctx.admin.inject({ method: 'PATCH', url: `/admin/partners/${p.id}`, headers: auth(), payload: {} });
    expect(empty.statusCode).toBe(400);
  });

  it('rotates a key: the new one works and the old one keeps working during the grace period', async () => {
    const p = await ctx.partner();
    const res = await ctx.admin.inject({ method: 'POST', url: `/admin/partners/${p.id}/keys`, headers: auth() });
    expect(res.statusCode).toBe(201);
    const { apiKey } = res.json<{ apiKey: string }>();
    expect(apiKey).not.toBe(p.apiKey);
    for (const k of [apiKey, p.apiKey]) {
      const r = await ctx.api(k, { method: 'GET', url: '/api/v1/invoices?ttd=0000000' });
      expect(r.statusCode).toBe(200);
    }
  });
});

describe('operator CLI', () => {
  /** The CLI as an operator runs it: a process of its own, configured by ADMIN_URL and ADMIN_TOKEN. */
  const cliProcess = (...args: string[]) =>
    run(process.execPath, ['--import', 'tsx', 'src/bin/cli.ts', ...args], { env: { ...process.env, ADMIN_URL: adminUrl, ADMIN_TOKEN: ctx.config.adminToken } });

  /** The same commands through main(), in this process (each process of its own costs 2 s of CPU): what they printed. */
  async function cli(...argv: string[]): Promise<{ stdout: string }> {
    const { code, stdout } = await runCli(argv, { adminUrl, adminToken: ctx.config.adminToken });
    expect(code).toBe(0);
    return { stdout };
  }

  it('creates, lists, deactivates, re-keys and switches the QR standard of a partner', async () => {
    const created = JSON.parse((await cliProcess('partner', 'create', '--name', 'Golomt Bank', '--qr-standard', 'govstd', '--inactive')).stdout) as Partner;
    expect(created).toMatchObject({ name: 'Golomt Bank', qrStandard: 'govstd', environment: 'sandbox', active: false });
    expect(created.apiKey).toMatch(/^gpk_sandbox_/);

    const listed = JSON.parse((await cli('partner', 'list')).stdout) as Partner[];
    expect(listed.map((p) => p.id)).toContain(created.id);

    expect(JSON.parse((await cli('partner', 'activate', created.id)).stdout)).toMatchObject({ active: true });
    expect(JSON.parse((await cli('partner', 'deactivate', created.id)).stdout)).toMatchObject({ active: false });
    expect(JSON.parse((await cli('partner', 'set-qr-standard', created.id, 'qrpay')).stdout)).toMatchObject({ qrStandard: 'qrpay' });
    const rotated = JSON.parse((await cli('partner', 'rotate-key', created.id)).stdout) as { apiKey: string };
    expect(rotated.apiKey).toMatch(/^gpk_sandbox_/);

    const live = JSON.parse((await cli('partner', 'create', '--name', 'Live', '--env', 'production')).stdout) as Partner;
    expect(live.apiKey).toMatch(/^gpk_live_/);
  }, 60_000);

  it('exits non-zero with usage on a bad command', async () => {
    await expect(cliProcess('partner', 'explode')).rejects.toMatchObject({ code: 2 });
  }, 30_000);
});
