import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readAlertRules } from '../helpers/alert-rules.js';

/*
 * Every alert of deploy/prometheus/alerts.yml says how urgent it is and leads the operator to its
 * paragraph of the runbook (docs/operations.md), whose anchor exists.
 */

const OPERATIONS = join(import.meta.dirname, '..', '..', 'docs', 'operations.md');

/** A heading's anchor as GitHub and most Markdown renderers make it. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

const anchors = () => new Set(readFileSync(OPERATIONS, 'utf8').split('\n').flatMap((line) => /^#{1,6}\s+(.*)$/.exec(line)?.[1] ?? []).map(anchorOf));

describe('alerting rules and their runbook', () => {
  const rules = readAlertRules();

  it('reads every rule of the file', () => {
    const text = readFileSync(join(import.meta.dirname, '..', '..', 'deploy', 'prometheus', 'alerts.yml'), 'utf8');
    expect(rules.map((r) => r.alert)).toEqual([...text.matchAll(/^\s*- alert:\s*(\S+)/gm)].map((m) => m[1]));
    expect(rules.length).toBeGreaterThanOrEqual(8);
  });

  it.each(readAlertRules().map((r) => [r.alert, r] as const))('%s has a for:, a severity, a summary, a description and a runbook paragraph', (_name, rule) => {
    expect(rule.for).toMatch(/^\d+[smh]$/);
    expect(['page', 'ticket']).toContain(rule.labels.severity);
    expect(rule.annotations.summary?.length).toBeGreaterThan(10);
    expect(rule.annotations.description?.length).toBeGreaterThan(10);
    const url = rule.annotations.runbook_url ?? '';
    expect(url).toMatch(/^docs\/operations\.md#[a-z0-9-]+$/);
    expect(anchors()).toContain(url.slice(url.indexOf('#') + 1));
  });

  it('gives each alert a paragraph of its own', () => {
    const urls = rules.map((r) => r.annotations.runbook_url);
    expect(new Set(urls).size).toBe(urls.length);
  });

  it('finds an anchor that is not there missing', () => {
    expect(anchors()).not.toContain('no-such-paragraph');
    expect(anchorOf('API 5xx rate')).toBe('api-5xx-rate');
  });
});
