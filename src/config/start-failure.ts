/**
 * Settings a process cannot start with, every one of them: an entry point prints each problem on
 * a line of its own and exits with EX_CONFIG.
 */
export class ConfigError extends Error {
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(`Invalid configuration: ${problems.join('; ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** sysexits.h's EX_CONFIG: a supervisor (or an operator) tells a wrong setting from a crash by it. */
export const EX_CONFIG = 78;

/**
 * A start refused for a reason its one line says in full, such as a schema older than the code:
 * a stack trace would only bury it.
 */
export class StartRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartRefusal';
  }
}

/** What an entry point prints on stderr for a failed start, and its exit code. */
export interface StartFailure {
  lines: string[];
  exitCode: number;
}

/**
 * A wrong setting or a refusal, as an operator reads it: one line per problem, no stack. Any
 * other error is a fault, whose stack is worth having; null leaves it to the entry point.
 */
export function startFailure(err: unknown, what: string): StartFailure | null {
  if (err instanceof ConfigError) return { lines: err.problems.map((p) => `configuration: ${p}`), exitCode: EX_CONFIG };
  if (err instanceof StartRefusal) return { lines: [`${what}: ${err.message}`], exitCode: 1 };
  return null;
}
