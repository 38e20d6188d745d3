import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_REFERENCE_CSP, registerOpenApi } from '../../src/http/plugins/openapi.plugin.js';
import { contentSecurityPolicy, fillTemplate, loadPageTemplate, pageHeaders } from '../../src/http/plugins/page-security.plugin.js';

const HTTP = new URL('../../src/http/', import.meta.url);
/** Every page template the service serves: whatever HTML lives under src/http. */
const TEMPLATES = (readdirSync(fileURLToPath(HTTP), { recursive: true }) as string[]).filter((file) => file.endsWith('.html'));

/** What every page's policy must say, whichever page it is. */
function expectStrictPolicy(csp: string): void {
  expect(csp).not.toContain('unsafe-inline');
  expect(csp).not.toContain('unsafe-eval');
  expect(csp).not.toMatch(/https?:|\*/);
  expect(csp).toContain("default-src 'none'");
  expect(csp.split(';').map((d) => d.trim())).toContain("frame-ancestors 'none'");
}

describe('the pages\' security policy', () => {
  it('finds the pages', () => {
    expect(TEMPLATES.map((f) => f.replace(/\\/g, '/')).sort()).toEqual(
      expect.arrayContaining(['console/console.page.html', 'sandbox/sandbox.page.html', 'short-link/short-link.message.html', 'short-link/short-link.page.html']),
    );
  });

  it.each(TEMPLATES)('%s: no inline permission, never framed, no markup the policy would block', (file) => {
    const page = loadPageTemplate(new URL(file, HTTP));
    expectStrictPolicy(page.csp);
    // Style attributes and inline handlers are blocked without 'unsafe-inline': none may be in the markup.
    expect(page.html).not.toMatch(/<[^>]+\sstyle\s*=/i);
    expect(page.html).not.toMatch(/<[^>]+\son[a-z]+\s*=/i);
    expect(page.html).not.toMatch(/<(script|link|img)[^>]+(src|href)="(https?:)?\/\//i);
  });

  it('allows each inline block by its hash and a script file from the page\'s own origin only', () => {
    const csp = contentSecurityPolicy('<style>b{}</style><script>go()</script><script src="/x.js" integrity="sha256-y"></script>');
    expect(csp).toContain("script-src 'self' 'sha256-");
    expect(csp).toMatch(/style-src 'sha256-[A-Za-z0-9+/=]+';/);
    expect(csp).toContain("connect-src 'self'");
    expect(contentSecurityPolicy('<p>static</p>')).toContain("script-src 'none'; style-src 'none'; img-src data:; connect-src 'none'");
  });

  it('fills a template once, so a value spelling a placeholder stays as it is', () => {
    expect(fillTemplate('<b>{{A}}</b>{{B}}', { A: '{{B}}', B: 'x' })).toBe('<b>{{B}}</b>x');
  });
});

describe('the API reference page (Swagger UI) under the same headers', () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    // Only what the page needs: the document's plugins, and one route outside it.
    app = Fastify({ routerOptions: { ignoreTrailingSlash: true } });
    await registerOpenApi(app, '/api/v1');
    app.get('/api/v1/other', async () => ({ ok: true }));
    await app.ready();
  });
  afterAll(() => app.close());

  it('allows nothing inline but its one style block by hash, nothing from another host, and is never framed', () => {
    expectStrictPolicy(API_REFERENCE_CSP);
    expect(API_REFERENCE_CSP).toContain("script-src 'self';");
    expect(API_REFERENCE_CSP).toMatch(/style-src 'self' 'sha256-[A-Za-z0-9+/=]+';/);
    expect(API_REFERENCE_CSP).toContain("connect-src 'self';");
  });

  it.each(['/api/v1/docs', '/api/v1/docs/', '/api/v1/docs/json', '/api/v1/docs/yaml'])('%s: every page header, never cached', async (url) => {
    const res = await app.inject(url);
    expect(res.statusCode).toBe(200);
    expect(res.headers).toMatchObject({ ...pageHeaders(API_REFERENCE_CSP), 'cross-origin-resource-policy': 'same-origin' });
  });

  it.each(['swagger-ui-bundle.js', 'swagger-ui-standalone-preset.js', 'swagger-initializer.js', 'swagger-ui.css', 'index.css', 'favicon-32x32.png'])(
    '/api/v1/docs/static/%s: the same headers, its caching left to the static server',
    async (file) => {
      const res = await app.inject(`/api/v1/docs/static/${file}`);
      expect(res.statusCode).toBe(200);
      const { 'cache-control': _noStore, ...rest } = pageHeaders(API_REFERENCE_CSP);
      expect(res.headers).toMatchObject({ ...rest, 'cross-origin-resource-policy': 'same-origin' });
      expect(res.headers['cache-control']).not.toBe('no-store');
    },
  );

  it('loads its scripts and stylesheets only from where its policy allows them', async () => {
    const html = (await app.inject('/api/v1/docs')).body;
    expect(html).not.toMatch(/<script>|<style>|\sstyle\s*=|\son[a-z]+\s*=/i);
    const sources = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] ?? '');
    expect(sources.length).toBeGreaterThan(0);
    for (const source of sources) expect(source).toMatch(/^\/api\/v1\/docs\/static\//);
  });

  it('leaves the routes outside the reference as they were', async () => {
    const res = await app.inject('/api/v1/other');
    expect(res.headers['content-security-policy']).toBeUndefined();
    expect(res.headers['x-frame-options']).toBeUndefined();
  });
});
