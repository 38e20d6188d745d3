import { readFileSync } from 'node:fs';
import { MS_PER_TICK } from './bench-processes.js';

const SAMPLE_MS = 50;

export interface StealReport {
  /** Time the hypervisor ran something else on this VM's vCPUs during the phase, summed over vCPUs (ms); null off Linux. */
  totalMs: number | null;
  /** The 100 ms windows (ms from the phase start) where steal was seen, largest first. */
  windows: { atMs: number; ms: number }[];
}

function readSteal(): number | null {
  try {
    // The aggregate "cpu" line: user nice system idle iowait irq softirq steal ...
    const fields = readFileSync('/proc/stat', 'latin1').slice(0, 200).split('\n')[0]?.trim().split(/\s+/);
    const steal = Number(fields?.[8]);
    return Number.isFinite(steal) ? steal : null;
  } catch {
    return null;
  }
}

/**
 * Samples the machine's CPU steal every 50 ms from `start` (a performance.now() value) until
 * stopped. On a VM a latency stall that no process explains can be the hypervisor running another
 * guest on the vCPUs: this puts such time next to the phase's slow windows.
 */
export function watchSteal(start: number): { stop(): StealReport } {
  let last = readSteal();
  const first = last;
  const perWindow = new Map<number, number>();
  const timer = setInterval(() => {
    const now = readSteal();
    if (now === null || last === null) return;
    if (now > last) {
      const at = Math.floor((performance.now() - start) / 100) * 100;
      perWindow.set(at, (perWindow.get(at) ?? 0) + (now - last) * MS_PER_TICK);
    }
    last = now;
  }, SAMPLE_MS);
  return {
    stop() {
      clearInterval(timer);
      const end = readSteal();
      const totalMs = first === null || end === null ? null : (end - first) * MS_PER_TICK;
      const windows = [...perWindow].map(([atMs, ms]) => ({ atMs, ms })).sort((a, b) => b.ms - a.ms).slice(0, 5);
      return { totalMs, windows };
    },
  };
}
