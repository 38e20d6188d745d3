import type { Config } from '../config/config.js';
import { createMinistryAdapters } from '../adapters/ministry/ministry.factory.js';
import { instrumentAdapters } from '../adapters/ministry/instrumented-adapter.js';
import { traceAdapters } from '../adapters/ministry/traced-adapter.js';
import { guardAdapters } from '../adapters/ministry/guarded-adapter.js';
import type { MinistryAdapters } from '../domain/ministry.port.js';
import { createAdaptiveLimit, type AdaptiveLimit } from '../domain/adaptive-limit.js';
import { SOURCES, type Source } from '../domain/vocabulary.js';
import type { Runtime } from './data.factory.js';
import { createKeyedSlots, type KeyedSlots } from '../work/keyed-slots.js';

export interface Ministries {
  /** The ministry systems behind their circuit breakers, each call counted and timed. */
  ministries: MinistryAdapters;
  /** Confirmation checks in flight per system, learnt from each system's answers. */
  confirmLimits: Record<Source, AdaptiveLimit>;
  /**
   * Status checks in flight per system within its limit: the confirmation job's and the partners'
   * live reads take from the same slots, so one in-process budget bounds both.
   */
  checkSlots: KeyedSlots;
  close(): Promise<void>;
}

function createConfirmLimits(config: Config, metrics: Runtime['metrics']): Record<Source, AdaptiveLimit> {
  const limits = Object.fromEntries(
    SOURCES.map((source) => [source, createAdaptiveLimit({ min: config.confirmConcurrencyPerSource, max: config.confirmConcurrencyMaxPerSource })]),
  ) as Record<Source, AdaptiveLimit>;
  for (const source of SOURCES) metrics.ministryConcurrencyLimit.set({ source }, limits[source].limit());
  return limits;
}

export function createMinistries(config: Config, runtime: Runtime, urls: Record<Source, string>): Ministries {
  const { tracer, metrics, now } = runtime;
  // The partners' requests keep the 16 connections they had beside the background checks at their cap.
  const upstream = createMinistryAdapters({
    urls,
    timeoutMs: config.ministryTimeoutMs,
    connections: config.confirmConcurrencyMaxPerSource + 16,
    traceHeaders: () => tracer.outgoing(),
    maxResponseBytes: config.ministryMaxResponseBytes,
  });
  const ministries = guardAdapters(
    instrumentAdapters(traceAdapters(upstream, tracer), metrics),
    config.circuitBreaker,
    () => now().getTime(),
    (source, operation, state) => metrics.ministryCircuitOpen.set({ source, operation }, state === 'closed' ? 0 : 1),
  );
  const confirmLimits = createConfirmLimits(config, metrics);
  const checkSlots = createKeyedSlots((source) => confirmLimits[source as Source].limit());
  return { ministries, confirmLimits, checkSlots, close: () => upstream.close() };
}
