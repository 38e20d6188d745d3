import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { FastifyReply } from 'fastify';
import type { PageScript } from '../page-script.bundler.js';

/*
 * The one security-header policy of every HTML page the service serves (the operator console,
 * the sandbox page, the QR landing page; the API reference too, whose markup is Swagger UI's:
 * openapi.plugin.ts): nothing from any other host, no inline script or style but the page's own
 * by hash, a script file only from the page's own origin (and pinned by its integrity attribute
 * where the markup is ours), never framed, never indexed, never cached.
 */

export interface PageTemplate {
  html: string;
  /** The Content-Security-Policy the page is sent with, derived from its own markup. */
  csp: string;
}

/** A CSP source allowing the inline block `text`, and nothing else. */
export const hashOf = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
const inline = (html: string, tag: string) => [...html.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g'))].map((m) => hashOf(m[1] ?? ''));
const sources = (list: string[]) => (list.length > 0 ? list.join(' ') : "'none'");

/** The page's policy: its inline `<script>` and `<style>` blocks by hash, `'self'` for a `<script src>`. */
export function contentSecurityPolicy(html: string): string {
  const scripts = [...(/<script\s[^>]*\bsrc=/.test(html) ? ["'self'"] : []), ...inline(html, 'script')];
  return [
    "default-src 'none'",
    `script-src ${sources(scripts)}`,
    `style-src ${sources(inline(html, 'style'))}`,
    'img-src data:',
    // A page without script cannot fetch anything anyway; one with script talks to its own origin only.
    scripts.length > 0 ? "connect-src 'self'" : "connect-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** Read once at start-up: a page's markup, relative to the calling module (`new URL('../x/y.html', import.meta.url)`). */
export function loadPageTemplate(file: URL): PageTemplate {
  const html = readFileSync(file, 'utf8');
  return { html, csp: contentSecurityPolicy(html) };
}

/** One pass, so a value that itself spells `{{NAME}}` is never substituted again. */
export function fillTemplate(html: string, values: Record<string, string>): string {
  return html.replace(/\{\{([A-Z_]+)\}\}/g, (whole, name: string) => values[name] ?? whole);
}

/** The `{{SCRIPT_SRC}}` and `{{SCRIPT_INTEGRITY}}` of a page that loads its bundled script from `path`. */
export const scriptValues = (path: string, script: PageScript): Record<string, string> => ({
  SCRIPT_SRC: `${path}?v=${script.version}`,
  SCRIPT_INTEGRITY: script.integrity,
});

/**
 * The headers every page is sent with under its policy `csp`: by sendPage, and by the routes of
 * pages whose markup is not ours (the API reference, served by Swagger UI: openapi.plugin.ts).
 */
export function pageHeaders(csp: string) {
  return {
    'cache-control': 'no-store',
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
    'x-robots-tag': 'noindex, nofollow',
    'content-security-policy': csp,
  };
}

export function sendPage(reply: FastifyReply, status: number, page: PageTemplate, values: Record<string, string> = {}) {
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .headers(pageHeaders(page.csp))
    .send(fillTemplate(page.html, values));
}

/** A page's bundled script; the page's own policy allows it from this origin only. */
export function sendPageScript(reply: FastifyReply, script: PageScript) {
  return reply
    .type('text/javascript; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('x-content-type-options', 'nosniff')
    .header('cross-origin-resource-policy', 'same-origin')
    .send(script.code);
}
