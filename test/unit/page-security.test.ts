import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { contentSecurityPolicy, fillTemplate, loadPageTemplate } from '../../src/http/plugins/page-security.plugin.js';

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
