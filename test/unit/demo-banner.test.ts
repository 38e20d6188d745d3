import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { printDemoBanner, type BannerPartners } from '../../src/bin/demo-banner.js';
import type { Partner } from '../../src/services/partner.service.js';

const DEMO_ID = '11111111-1111-4111-8111-111111111111';
const KEY = 'gpk_sandbox_demo-key-shown-once';

function partnerRow(id: string, name: string): Partner {
  return { id, name, qrStandard: 'qrpay', environment: 'sandbox', active: true, rateLimits: null, createdAt: new Date('2025-01-01T00:00:00Z') };
}

/** An in-memory stand-in for the partner service: what the banner reads and creates. */
function fakePartners(existing: Partner[]): BannerPartners & { created: string[] } {
  const rows = [...existing];
  const created: string[] = [];
  return {
    created,
    count: async () => rows.length,
    list: async () => [...rows],
    create: async (input) => {
      const row = partnerRow(DEMO_ID, input.name);
      rows.push(row);
      created.push(input.name);
      return { ...row, apiKey: KEY };
    },
  };
}

async function banner(partners: BannerPartners, env: Record<string, string> = {}): Promise<string[]> {
  const printed: string[] = [];
  await printDemoBanner(loadConfig({ APP_ENV: 'local', ...env }), partners, true, (text) => printed.push(text));
  return printed.join('\n').split('\n');
}

const line = (lines: string[], start: string) => lines.find((l) => l.startsWith(start));

describe('local start banner', () => {
  it('on the first start: creates the demo partner and shows its key with every URL', async () => {
    const partners = fakePartners([]);
    const lines = await banner(partners);

    expect(partners.created).toEqual(['Demo Bank']);
    expect(line(lines, 'API:')).toBe('API:       http://127.0.0.1:3000/api/v1');
    expect(line(lines, 'Sandbox:')).toContain('http://127.0.0.1:3000/api/v1/sandbox');
    expect(line(lines, 'API docs:')).toContain('http://127.0.0.1:3000/api/v1/docs');
    expect(line(lines, 'Console:')).toContain('http://127.0.0.1:3001/');
    expect(line(lines, 'Simulator:')).toContain('http://127.0.0.1:3100');
    expect(line(lines, 'Demo partner API key:')).toBe(`Demo partner API key: ${KEY}`);
    expect(lines.some((l) => l.includes(`curl -H "X-API-Key: ${KEY}" "http://127.0.0.1:3000/api/v1/invoices?ttd=5317878"`))).toBe(true);
    expect(lines.join('\n')).not.toContain('partner create');
  });

  it('on a restart: shows every URL again and how to get a key, naming the demo partner id', async () => {
    const partners = fakePartners([partnerRow('22222222-2222-4222-8222-222222222222', 'Other Bank'), partnerRow(DEMO_ID, 'Demo Bank')]);
    const lines = await banner(partners);
    const text = lines.join('\n');

    expect(partners.created).toEqual([]);
    expect(line(lines, 'API:')).toBe('API:       http://127.0.0.1:3000/api/v1');
    expect(line(lines, 'Sandbox:')).toContain('http://127.0.0.1:3000/api/v1/sandbox');
    expect(line(lines, 'API docs:')).toContain('http://127.0.0.1:3000/api/v1/docs');
    expect(line(lines, 'Console:')).toContain('http://127.0.0.1:3001/');
    expect(text).not.toContain('gpk_sandbox_');
    expect(text).toContain('npm run cli -- partner create --name "My Bank"');
    expect(text).toContain(`npm run cli -- partner rotate-key ${DEMO_ID}`);
  });

  it('on a restart without the demo partner: points at partner list for an id', async () => {
    const lines = await banner(fakePartners([partnerRow('22222222-2222-4222-8222-222222222222', 'Other Bank')]), { PORT: '8080', HOST: '0.0.0.0' });
    const text = lines.join('\n');
    expect(line(lines, 'API:')).toBe('API:       http://127.0.0.1:8080/api/v1');
    expect(text).toContain('npm run cli -- partner create --name "My Bank"');
    expect(text).toContain('npm run cli -- partner rotate-key <partnerId>');
    expect(text).toContain('npm run cli -- partner list');
  });
});
