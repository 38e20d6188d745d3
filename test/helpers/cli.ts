import { vi, type MockInstance } from 'vitest';
import { main } from '../../src/bin/cli-commands.js';
import type { CliConfig } from '../../src/config/process-env.js';

const printed = (spy: MockInstance<(...args: unknown[]) => void>) => spy.mock.calls.map((c) => String(c[0])).join('\n');

/** The operator CLI run in this process through main(): its exit code, and what it printed to stdout and stderr. */
export async function runCli(argv: string[], config: CliConfig): Promise<{ code: number; stdout: string; stderr: string }> {
  const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
  const error = vi.spyOn(console, 'error').mockImplementation(() => undefined);
  try {
    const code = await main(argv, config);
    return { code, stdout: printed(log), stderr: printed(error) };
  } finally {
    log.mockRestore();
    error.mockRestore();
  }
}
