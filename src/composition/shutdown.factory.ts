/** Runs every close, in order, even when one fails; then fails with all that did. */
export async function closeAll(steps: (() => Promise<unknown>)[]): Promise<void> {
  const failures: unknown[] = [];
  for (const step of steps) {
    try {
      await step();
    } catch (err) {
      failures.push(err);
    }
  }
  if (failures.length > 0) throw new AggregateError(failures, 'closing the dependencies failed');
}

/** Jobs first: a pass in flight still uses the database and the clients closed after them. */
export function createShutdown(stopJobs: () => Promise<void>, closes: (() => Promise<unknown>)[]): () => Promise<void> {
  return async () => {
    await stopJobs();
    await closeAll(closes);
  };
}
