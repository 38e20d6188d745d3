import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';

/*
 * The alerting rules of deploy/prometheus/alerts.yml as the tests read them, and `promtool test
 * rules` run on series made from real scrapes of /metrics.
 */

export const ALERTS_FILE = join(import.meta.dirname, '..', '..', 'deploy', 'prometheus', 'alerts.yml');

/** Prometheus' rule checker, from Debian's `prometheus` package; the tests that need it skip without it. */
export const PROMTOOL = 'promtool';
export const hasPromtool = (): boolean => spawnSync(PROMTOOL, ['--version'], { stdio: 'ignore' }).status === 0;

export interface AlertRule {
  alert: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

interface RuleFile {
  groups: { name: string; rules: (Partial<AlertRule> & { record?: string })[] }[];
}

/** The alerting rules of a Prometheus rule file (recording rules left out). */
export function parseAlertRules(text: string): AlertRule[] {
  const file = parse(text) as RuleFile;
  return file.groups.flatMap((g) => g.rules).flatMap((r) => (r.alert ? [{ alert: r.alert, for: r.for, labels: r.labels ?? {}, annotations: r.annotations ?? {} }] : []));
}

export const readAlertRules = (): AlertRule[] => parseAlertRules(readFileSync(ALERTS_FILE, 'utf8'));

/** An annotation as Prometheus renders it for an alert with these labels (the file uses only `$labels`). */
export function renderTemplate(template: string, labels: Record<string, string>): string {
  return template.replace(/\{\{\s*\$labels\.(\w+)\s*\}\}/g, (_m, name: string) => labels[name] ?? '');
}

interface Sample {
  /** `name{labels}` as the exposition wrote it (Prometheus' escaping, the same as PromQL's). */
  series: string;
  name: string;
  value: number;
}

/** The samples of a text exposition, and each family's type. */
export function parseExposition(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1]!, type[2]!);
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    const series = line.slice(0, space);
    samples.push({ series, name: /^[^{\s]+/.exec(series)![0], value: Number(line.slice(space + 1)) });
  }
  return { samples, types };
}

const COUNTER_TYPES = new Set(['counter', 'histogram', 'summary']);

function isCounter(name: string, types: Map<string, string>): boolean {
  const family = types.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
  return COUNTER_TYPES.has(types.get(family) ?? 'untyped');
}

/** The labels Prometheus adds to what it scrapes. */
const TARGET = 'instance="api-1:3001",job="payment-channel"';

function withTarget(series: string): string {
  return series.endsWith('}') ? `${series.slice(0, -1)},${TARGET}}` : `${series}{${TARGET}}`;
}

export interface Scrapes {
  first: string;
  second: string;
}

/** promtool's scrape interval, and how many scrapes the synthetic series hold. */
export const SCRAPE_INTERVAL_S = 15;
const STEPS = 100;
export const EVAL_TIME = `${SCRAPE_INTERVAL_S * STEPS}s`;

/**
 * Input series for promtool as if the service had stayed as the two scrapes found it for STEPS
 * scrapes (25 minutes, more than any rule's window plus its `for:`): a gauge keeps its value of the
 * second scrape, a counter grows at every scrape by what it grew between the two. Only the
 * metrics the rule file names are kept.
 */
export function inputSeries(scrapes: Scrapes, rulesText = readFileSync(ALERTS_FILE, 'utf8')): { series: string; values: string }[] {
  const first = new Map(parseExposition(scrapes.first).samples.map((s) => [s.series, s.value]));
  const { samples, types } = parseExposition(scrapes.second);
  return samples
    .filter((s) => new RegExp(`\\b${s.name}\\b`).test(rulesText))
    .map((s) => {
      const values = isCounter(s.name, types) ? `${first.get(s.series) ?? 0}+${s.value - (first.get(s.series) ?? 0)}x${STEPS}` : `${s.value}+0x${STEPS}`;
      return { series: withTarget(s.series), values };
    });
}

export interface ExpectedAlert {
  alertname: string;
  /** The labels the alert's expression leaves (its `by` labels); the rule's own are added. */
  labels: Record<string, string>[];
}

/** promtool's test case for each alert: these fire with exactly these labels and rendered annotations. */
export function alertTests(expected: ExpectedAlert[], rules = readAlertRules()) {
  return expected.map(({ alertname, labels }) => {
    const rule = rules.find((r) => r.alert === alertname);
    if (!rule) throw new Error(`no rule ${alertname} in ${ALERTS_FILE}`);
    return {
      eval_time: EVAL_TIME,
      alertname,
      exp_alerts: labels.map((l) => {
        const all = { ...l, ...rule.labels };
        return { exp_labels: all, exp_annotations: Object.fromEntries(Object.entries(rule.annotations).map(([k, v]) => [k, renderTemplate(v, { ...all, alertname })])) };
      }),
    };
  });
}

/** Runs `promtool test rules` on the rule file with these series and expectations; its output when it fails. */
export async function promtoolTest(series: { series: string; values: string }[], tests: ReturnType<typeof alertTests>): Promise<{ ok: boolean; output: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'alert-rules-'));
  try {
    const file = join(dir, 'test.yml');
    const unitTest = {
      rule_files: [ALERTS_FILE],
      evaluation_interval: `${SCRAPE_INTERVAL_S}s`,
      tests: [{ interval: `${SCRAPE_INTERVAL_S}s`, input_series: series, alert_rule_test: tests }],
    };
    // JSON is YAML: promtool reads it as it is.
    await writeFile(file, JSON.stringify(unitTest, null, 1));
    return await new Promise((resolve) => {
      execFile(PROMTOOL, ['test', 'rules', file], (err, stdout, stderr) => resolve({ ok: err === null, output: `${stdout}${stderr}` }));
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
