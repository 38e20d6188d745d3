import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The comments a walk-through lies between, and the fence language of the blocks that are run. */
export interface WalkthroughMarkers {
  start: string;
  end: string;
  language: string;
}

/** The README's "A payment, step by step": its ```bash blocks (its ```sh block starts the server). */
export const README_WALKTHROUGH: WalkthroughMarkers = { start: '<!-- walkthrough:start -->', end: '<!-- walkthrough:end -->', language: 'bash' };
/**
 * docs/partner-guide.md's "The walk-through": its ```sh blocks. Markers of their own, so neither
 * document's can be mistaken for the other's should one quote the other.
 */
export const GUIDE_WALKTHROUGH: WalkthroughMarkers = { start: '<!-- guide-walkthrough:start -->', end: '<!-- guide-walkthrough:end -->', language: 'sh' };
/** docs/partner-guide.md's worked example of a case (section 7): its ```sh blocks, pasted after the walk-through's step 0. */
export const GUIDE_CASES: WalkthroughMarkers = { start: '<!-- guide-cases:start -->', end: '<!-- guide-cases:end -->', language: 'sh' };

export interface Walkthrough {
  /** The text between the markers. */
  section: string;
  /** The blocks of the markers' language, in order, with the list indentation taken off. */
  blocks: string[];
}

function only(text: string, marker: string): number {
  const at = text.indexOf(marker);
  if (at < 0) throw new Error(`the document has no ${marker}`);
  if (text.indexOf(marker, at + 1) >= 0) throw new Error(`the document has ${marker} more than once`);
  return at;
}

/**
 * The fenced code blocks of `language` in `text`, in order. A fence may be indented (a block
 * inside a list item); its lines lose that indentation, as they do when copied from the rendered
 * page. Blocks of other languages are skipped.
 */
export function codeBlocks(text: string, language: string): string[] {
  const blocks: string[] = [];
  let open: { indent: string; fence: string; wanted: boolean; lines: string[] } | null = null;
  for (const line of text.split('\n')) {
    if (!open) {
      const m = /^( *)(`{3,}|~{3,})\s*([\w-]*)/.exec(line);
      if (m) open = { indent: m[1] ?? '', fence: m[2] ?? '```', wanted: m[3] === language, lines: [] };
      continue;
    }
    if (line.trim().startsWith(open.fence) && line.trim().replaceAll(open.fence[0] ?? '`', '') === '') {
      if (open.wanted) blocks.push(open.lines.join('\n'));
      open = null;
      continue;
    }
    open.lines.push(line.startsWith(open.indent) ? line.slice(open.indent.length) : line.trimStart());
  }
  if (open) throw new Error('the text ends inside a code block');
  return blocks;
}

/** The walk-through section of a document between `markers`, and its code blocks of their language. */
export function readWalkthrough(doc: string, markers: WalkthroughMarkers = README_WALKTHROUGH): Walkthrough {
  const start = only(doc, markers.start);
  const end = only(doc, markers.end);
  if (end < start) throw new Error(`${markers.end} comes before ${markers.start}`);
  const section = doc.slice(start + markers.start.length, end);
  return { section, blocks: codeBlocks(section, markers.language) };
}

/**
 * Replaces each literal with its replacement; every literal must occur at least once, so a
 * document that moves to another port or spelling fails here instead of reaching a server the
 * test did not start (a developer's own `npm start` on port 3000, say).
 */
export function rewrite(script: string, replacements: [from: string, to: string][]): string {
  let out = script;
  for (const [from, to] of replacements) {
    if (!out.includes(from)) throw new Error(`the walk-through no longer contains "${from}": update the test's port map`);
    out = out.replaceAll(from, to);
  }
  return out;
}

/** `count` distinct TCP ports that were free a moment ago on 127.0.0.1 (held together, so no two are the same). */
export async function freePorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer());
  try {
    return await Promise.all(
      servers.map(
        (server) =>
          new Promise<number>((resolve, reject) => {
            server.once('error', reject);
            server.listen(0, '127.0.0.1', () => {
              const address = server.address();
              resolve(typeof address === 'object' && address ? address.port : 0);
            });
          }),
      ),
    );
  } finally {
    await Promise.all(servers.map((server) => new Promise((resolve) => (server.listening ? server.close(resolve) : resolve(undefined)))));
  }
}

/** Which of `tools` this machine lacks, and the sentence a skipped test's name carries about them. */
export function missingTools(tools: string[]): { missing: string[]; skipReason: string } {
  const missing = tools.filter((tool) => spawnSync(tool, ['--version'], { stdio: 'ignore' }).status !== 0);
  const skipReason = missing.length ? ` (SKIPPED: ${missing.join(', ')} not installed; on Debian/Ubuntu: apt-get install -y ${missing.join(' ')})` : '';
  return { missing, skipReason };
}

/**
 * Only what a shell on a fresh machine has: nothing of the test's own environment (DATABASE_URL,
 * REDIS_URL, ADMIN_TOKEN, NODE_OPTIONS, vitest's variables) reaches the service or the commands.
 */
export function baseEnv(): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', LANG: process.env.LANG ?? 'C.UTF-8' };
  for (const name of ['HOME', 'TMPDIR', 'USER'] as const) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

export const tail = (text: string, chars = 6000): string => (text.length > chars ? `…${text.slice(-chars)}` : text);

/** The service as `npm start` runs it on a fresh clone, on ports of its own. */
export interface LocalService {
  apiPort: number;
  adminPort: number;
  simulatorPort: number;
  /** Holds the service's data directory; the test may put its own files beside it. */
  dataRoot: string;
  /** What the service has printed (its last 100 000 characters): the banner, warnings. */
  log(): string;
  /** SIGTERM (SIGKILL after 10 s), then the data directory is deleted. */
  stop(): Promise<void>;
}

/**
 * Starts the service as `npm start` does on a fresh clone: embedded PGlite in a data directory not
 * there yet, the built-in simulator, APP_ENV=local, plus `env` (the settings the document tells the
 * reader to start with). Resolves once the API and the admin listener answer; both listen only
 * once the database is up.
 */
export async function startLocalService(env: Record<string, string>): Promise<LocalService> {
  const [apiPort = 0, adminPort = 0, simulatorPort = 0] = await freePorts(3);
  const dataRoot = mkdtempSync(join(tmpdir(), 'walkthrough-'));
  let output = '';
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/bin/api.ts'], {
    cwd: ROOT,
    env: {
      ...baseEnv(),
      APP_ENV: 'local',
      PORT: String(apiPort),
      ADMIN_PORT: String(adminPort),
      SIMULATOR_PORT: String(simulatorPort),
      DATA_DIR: join(dataRoot, 'data'),
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-100_000));
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);

  const service: LocalService = {
    apiPort,
    adminPort,
    simulatorPort,
    dataRoot,
    log: () => output,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        const exited = new Promise((resolve) => proc.once('exit', resolve));
        proc.kill('SIGTERM');
        const force = setTimeout(() => proc.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(force);
      }
      rmSync(dataRoot, { recursive: true, force: true });
    },
  };

  const deadline = Date.now() + 60_000; // a cold tsx start on a loaded CI machine
  for (;;) {
    if (proc.exitCode !== null) {
      await service.stop();
      throw new Error(`the service exited with ${proc.exitCode}:\n${tail(output)}`);
    }
    const up = await Promise.all([
      fetch(`http://127.0.0.1:${apiPort}/api/v1/health/ready`).then((r) => r.ok, () => false),
      fetch(`http://127.0.0.1:${adminPort}/metrics`).then((r) => r.ok, () => false),
    ]);
    if (up.every(Boolean)) return service;
    if (Date.now() > deadline) {
      await service.stop();
      throw new Error(`the service did not get ready in 60 s:\n${tail(output)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export interface BashRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A bash running a walk-through; `kill` ends it and everything it started. */
export interface BashProcess {
  result: Promise<BashRun>;
  kill(): void;
}

/**
 * Runs `script` in one bash, in a process group of its own, so a timeout or `kill` also ends what
 * the script left running (a webhook receiver started with `&`).
 */
export function startBash(script: string, options: { cwd: string; env: Record<string, string>; timeoutMs: number }): BashProcess {
  let stdout = '';
  let stderr = '';
  const child: ChildProcess = spawn('bash', ['-c', script], { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const kill = () => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const result = new Promise<BashRun>((resolve) => {
    const timer = setTimeout(() => {
      stderr += `\n[test] the walk-through did not finish in ${options.timeoutMs} ms; killed`;
      kill();
    }, options.timeoutMs);
    // 'close' waits for every holder of the pipes, the script's background processes included.
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
  return { result, kill };
}

/** The one-line JSON objects in `output` (what `jq -c` and compact answers print), in order. */
export function jsonLines(output: string): Record<string, unknown>[] {
  return output
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.startsWith('{') && line.endsWith('}'))
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
}
