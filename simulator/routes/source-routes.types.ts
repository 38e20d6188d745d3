import type { SimulatorState } from '../simulator.state.js';

export interface SourceRouteOptions {
  state: SimulatorState;
  /** Aborted when the server starts closing, so held requests let go. */
  closing: AbortSignal;
}
