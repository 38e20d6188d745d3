import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/*
 * Without OTEL_EXPORTER_OTLP_ENDPOINT no OpenTelemetry module is loaded: the SDK, the exporter
 * and the instrumentations are imported only by src/adapters/tracing/otel.*.ts, and those only
 * by a dynamic import() in tracing.loader.ts (after it checked an endpoint is set) or from each
 * other. Any static import of them elsewhere would load them in every process.
 */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

const OTEL_ONLY = /^src\/adapters\/tracing\/otel\.[a-z-]+\.ts$/;
const STATIC_IMPORT = /^\s*import\s+(?!type\b)[^'"]*from\s+'([^']+)'/gm;

describe('OpenTelemetry modules load only with an exporter', () => {
  it('are imported statically by no module but the otel.*.ts ones, which nothing imports statically', () => {
    const offenders: string[] = [];
    for (const file of [...sources('src'), ...sources('simulator')]) {
      if (OTEL_ONLY.test(file)) continue;
      for (const [, specifier = ''] of readFileSync(file, 'utf8').matchAll(STATIC_IMPORT)) {
        if (specifier.startsWith('@opentelemetry/') || specifier.startsWith('@fastify/otel') || /\/otel\.[a-z-]+\.js$/.test(specifier)) offenders.push(`${file}: ${specifier}`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it('the loader reaches them through import() only when an endpoint is set', () => {
    const loader = readFileSync('src/adapters/tracing/tracing.loader.ts', 'utf8');
    expect(loader).toMatch(/if \(endpoint === null\) return \{ tracer: createLocalTracer\(asyncContext\.slot\(\)\)/);
    expect(loader).toMatch(/await import\('\.\/otel\.setup\.js'\)/);
  });
});
