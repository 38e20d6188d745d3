import { createServer } from 'node:net';

/** The README's walk-through lies between these two comments; only its bash blocks are run. */
export const START_MARKER = '<!-- walkthrough:start -->';
export const END_MARKER = '<!-- walkthrough:end -->';

export interface Walkthrough {
  /** The text between the markers. */
  section: string;
  /** The ```bash blocks, in order, with the list indentation taken off. */
  blocks: string[];
}

function only(text: string, marker: string): number {
  const at = text.indexOf(marker);
  if (at < 0) throw new Error(`README.md has no ${marker}`);
  if (text.indexOf(marker, at + 1) >= 0) throw new Error(`README.md has ${marker} more than once`);
  return at;
}

/**
 * The walk-through section of the README and its bash code blocks. A fence may be indented (a
 * block inside a list item); its lines lose that indentation, as they do when copied from the
 * rendered page. Blocks of other languages (```sh for the server start, ```json) are not run.
 */
export function readWalkthrough(readme: string): Walkthrough {
  const start = only(readme, START_MARKER);
  const end = only(readme, END_MARKER);
  if (end < start) throw new Error(`${END_MARKER} comes before ${START_MARKER}`);
  const section = readme.slice(start + START_MARKER.length, end);

  const blocks: string[] = [];
  let open: { indent: string; fence: string; bash: boolean; lines: string[] } | null = null;
  for (const line of section.split('\n')) {
    if (!open) {
      const m = /^( *)(`{3,}|~{3,})\s*([\w-]*)/.exec(line);
      if (m) open = { indent: m[1] ?? '', fence: m[2] ?? '```', bash: m[3] === 'bash', lines: [] };
      continue;
    }
    if (line.trim().startsWith(open.fence) && line.trim().replaceAll(open.fence[0] ?? '`', '') === '') {
      if (open.bash) blocks.push(open.lines.join('\n'));
      open = null;
      continue;
    }
    open.lines.push(line.startsWith(open.indent) ? line.slice(open.indent.length) : line.trimStart());
  }
  if (open) throw new Error('the walk-through ends inside a code block');
  return { section, blocks };
}

/**
 * Replaces each literal with its replacement; every literal must occur at least once, so a README
 * that moves to another port or spelling fails here instead of reaching a server the test did not
 * start (a developer's own `npm start` on port 3000, say).
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
