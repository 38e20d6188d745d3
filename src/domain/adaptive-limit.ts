/**
 * How many calls one ministry system may have in flight, learned from its answers: a latency
 * gradient for growth and congestion, a multiplicative cut for failures (after Netflix's
 * concurrency-limits). A system that answers slowly but just as slowly with more calls in flight
 * earns more slots; one whose answers slow down as we send more, or that fails, gets fewer.
 *
 * - The baseline is the latency the system shows under light load: calls that started with no more
 *   than `min` calls in flight. Heavier calls never move it, so latency that our own load causes
 *   can never become the new normal; a limit cut back to `min` relearns it.
 * - Each answered call moves the limit a fifth of the way towards `limit × gradient + √limit`, the
 *   gradient being `(tolerance × baseline + jitterMs) / recent latency` (a moving average), within
 *   [0.5, 1]: while latency holds the limit grows by the √limit headroom; once it climbs past
 *   that, the limit shrinks in proportion.
 * - The limit only grows while at least half of it is in use: an idle system's latency says
 *   nothing about how much more it can take.
 * - A failed call (an error, a timeout) multiplies the limit by `backoff`.
 * - The limit stays within [min, max].
 */
export interface AdaptiveLimitSettings {
  /** The floor, and the limit before any answer. */
  min: number;
  max: number;
  /** How far above the baseline recent latency may rise before the limit shrinks. */
  tolerance?: number;
  /** Latency below `tolerance × baseline` plus this is never taken for congestion (noise of fast calls). */
  jitterMs?: number;
  /** Factor applied to the limit on a failed call. */
  backoff?: number;
}

export interface CallSample {
  latencyMs: number;
  ok: boolean;
  /** Calls to the same system in flight when this one started, itself included. */
  inFlight: number;
}

export interface AdaptiveLimitState {
  /** Whole slots: the exact estimate, rounded down. */
  limit: number;
  estimate: number;
  baselineMs: number | null;
  recentMs: number | null;
}

export interface AdaptiveLimit {
  /** Whole slots allowed now. */
  limit(): number;
  /** Learns from one finished call; returns the new limit. */
  record(sample: CallSample): number;
  state(): AdaptiveLimitState;
}

/** Weight of a light-load call in the baseline. */
const BASELINE_WEIGHT = 0.2;
/** Weight of a call in the recent latency. */
const RECENT_WEIGHT = 0.3;
/** How much of the gap to the target one call closes, so single answers do not swing the limit. */
const SMOOTHING = 0.2;
const MIN_GRADIENT = 0.5;

export function createAdaptiveLimit(settings: AdaptiveLimitSettings): AdaptiveLimit {
  const min = Math.max(1, Math.floor(settings.min));
  const max = Math.max(min, Math.floor(settings.max));
  const tolerance = settings.tolerance ?? 2;
  const jitterMs = settings.jitterMs ?? 50;
  const backoff = settings.backoff ?? 0.8;
  let estimate = min;
  let baselineMs: number | null = null;
  let recentMs: number | null = null;

  const clamp = (n: number) => Math.min(max, Math.max(min, n));
  const limit = () => Math.floor(estimate);
  const ewma = (prev: number | null, sample: number, weight: number) => (prev === null ? sample : prev + (sample - prev) * weight);

  return {
    limit,
    record({ latencyMs, ok, inFlight }) {
      if (!ok) {
        estimate = clamp(estimate * backoff);
        return limit();
      }
      if (inFlight <= min) baselineMs = ewma(baselineMs, latencyMs, BASELINE_WEIGHT);
      recentMs = ewma(recentMs, latencyMs, RECENT_WEIGHT);
      if (baselineMs === null) return limit();
      const gradient = Math.max(MIN_GRADIENT, Math.min(1, (tolerance * baselineMs + jitterMs) / recentMs));
      const target = estimate * gradient + Math.sqrt(estimate);
      // Growth needs the slots to be in use; shrinking never waits.
      if (target > estimate && inFlight < estimate / 2) return limit();
      estimate = clamp(estimate + (target - estimate) * SMOOTHING);
      return limit();
    },
    state: () => ({ limit: limit(), estimate, baselineMs, recentMs }),
  };
}
