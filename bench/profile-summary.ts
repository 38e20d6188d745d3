import { readFileSync } from 'node:fs';

/**
 * `tsx bench/profile-summary.ts <file.cpuprofile> [top] [--last-s=N]`: self time by function and
 * by package (or by our own source file) from a V8 CPU profile written by `npm run bench --
 * --cpu-prof`. `--last-s` keeps only the profile's last N seconds, leaving out start-up and setup;
 * `--busiest-s=N` keeps the N seconds with the least idle time, a peak phase whatever ran around it,
 * and with `--under=NAME` the N seconds with the most samples under a function of that name (the
 * route handler of the endpoint measured, when the client shares the machine).
 */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function owner(url: string): string {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1] as string;
  const own = /\/(src|simulator)\/(.+)$/.exec(url);
  if (own) return `${own[1]}/${own[2]}`;
  return url.startsWith('node:') ? url : url === '' ? '(native/v8)' : 'other';
}

function topOf(map: Map<string, number>, total: number, n: number): string[] {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, us]) => `${((us / total) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${name}`);
}

/** The [from, to] microseconds of the `widthUs` window with the least idle time, or the least time outside `under`. */
function busiestWindow(profile: CpuProfile, byId: Map<number, ProfileNode>, parent: Map<number, number>, widthUs: number, under: string | undefined): [number, number] {
  const isUnder = (id: number): boolean => {
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) if (byId.get(at)?.callFrame.functionName === under) return true;
    return false;
  };
  const times: number[] = [];
  const idle: number[] = [];
  let at = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    times.push(at);
    const away = under === undefined ? byId.get(id)?.callFrame.functionName === '(idle)' : !isUnder(id);
    idle.push(away ? delta : 0);
  });
  let best: [number, number] = [0, widthUs];
  let bestIdle = Infinity;
  let windowIdle = 0;
  let start = 0;
  for (let end = 0; end < times.length; end++) {
    windowIdle += idle[end] ?? 0;
    while ((times[end] ?? 0) - (times[start] ?? 0) > widthUs) windowIdle -= idle[start++] ?? 0;
    if ((times[end] ?? 0) - (times[start] ?? 0) >= widthUs * 0.99 && windowIdle < bestIdle) {
      bestIdle = windowIdle;
      best = [times[start] ?? 0, times[end] ?? 0];
    }
  }
  return best;
}

function main(): void {
  const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  const lastS = Number(process.argv.find((a) => a.startsWith('--last-s='))?.slice(9) ?? Infinity);
  const [file, topArg] = args;
  if (!file) throw new Error('usage: tsx bench/profile-summary.ts <file.cpuprofile> [top]');
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const span = profile.timeDeltas.reduce((a, b) => a + b, 0);
  const busiestS = Number(process.argv.find((a) => a.startsWith('--busiest-s='))?.slice(12) ?? NaN);
  const [from, to] = Number.isFinite(busiestS) ? busiestWindow(profile, byId, parent, busiestS * 1e6, process.argv.find((a) => a.startsWith('--under='))?.slice(8)) : [span - lastS * 1e6, Infinity];
  const selfUs = new Map<number, number>();
  let at = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (at >= from && at <= to) selfUs.set(id, (selfUs.get(id) ?? 0) + delta);
  });
  const byFunction = new Map<string, number>();
  const byOwner = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') {
      idle += us;
      continue;
    }
    total += us;
    const name = `${functionName || '(anonymous)'} ${owner(url)}:${lineNumber + 1}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
    byOwner.set(owner(url), (byOwner.get(owner(url)) ?? 0) + us);
  }
  // Inclusive time of our own functions: self time plus everything they called.
  const inclusive = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)?.callFrame;
      if (!frame || !/\/(src|simulator)\//.test(frame.url) || frame.url.includes('node_modules')) continue;
      const name = `${frame.functionName || '(anonymous)'} ${owner(frame.url)}:${frame.lineNumber + 1}`;
      if (seen.has(name)) continue;
      seen.add(name);
      inclusive.set(name, (inclusive.get(name) ?? 0) + us);
    }
  }
  const n = Number(topArg ?? 40);
  console.log(`busy ${(total / 1000).toFixed(0)} ms, idle ${(idle / 1000).toFixed(0)} ms\n\nself time by package or source file:`);
  console.log(topOf(byOwner, total, n).join('\n'));
  console.log('\nself time by function:');
  console.log(topOf(byFunction, total, n).join('\n'));
  console.log('\ninclusive time of our own functions:');
  console.log(topOf(inclusive, total, n).join('\n'));
}

main();
