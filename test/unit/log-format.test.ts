import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { createLogger } from '../../src/composition/data.factory.js';

/** What a logger of LOG_FORMAT=`format` writes for one warning, line by line. */
function logged(format: string): string[] {
  const written: string[] = [];
  const config = loadConfig({ LOG_FORMAT: format });
  const logger = createLogger(config, { write: (line: string) => void written.push(line) });
  logger.warn({ partnerId: 'p-1', apiKey: 'gpk_secret' }, 'webhook disabled');
  return written.join('').split('\n').filter((line) => line !== '');
}

describe('LOG_FORMAT', () => {
  it('json writes one JSON object a line, with every field and the secret redacted', () => {
    const lines = logged('json');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({ level: 40, msg: 'webhook disabled', partnerId: 'p-1', apiKey: '[redacted]' });
  });

  it('pretty writes a line a person reads: time, level and message first, then the fields, the secret still redacted', () => {
    const lines = logged('pretty');
    expect(() => JSON.parse(lines[0] ?? '')).toThrow();
    expect(lines[0]).toMatch(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] WARN: webhook disabled$/);
    expect(lines.slice(1)).toEqual(['    partnerId: "p-1"', '    apiKey: "[redacted]"']);
    expect(lines.join('\n')).not.toContain('gpk_secret');
  });

  it('is pretty by default only for a local start on a terminal', () => {
    expect(loadConfig({}, { terminal: true }).logFormat).toBe('pretty');
    expect(loadConfig({}, { terminal: false }).logFormat).toBe('json');
    const sandbox = { APP_ENV: 'sandbox', ADMIN_TOKEN: 'a'.repeat(40), WEBHOOK_SECRET_KEY: 'b'.repeat(40) };
    expect(loadConfig(sandbox, { terminal: true }).logFormat).toBe('json');
    expect(loadConfig({ ...sandbox, LOG_FORMAT: 'pretty' }, { terminal: false }).logFormat).toBe('pretty');
    expect(() => loadConfig({ LOG_FORMAT: 'xml' })).toThrow('LOG_FORMAT must be one of json, pretty');
  });
});
