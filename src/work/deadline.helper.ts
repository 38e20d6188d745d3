/**
 * `work`'s answer, or `late()`'s once `ms` have passed without one; `work` is left to finish on its own.
 *
 * The deadline is judged only after the I/O that has already arrived is read. A process that was
 * paused (SIGSTOP, a frozen VM, a long GC) or whose event loop was blocked wakes with the timer
 * overdue and the answer waiting in its socket, and the event loop can run the timer first: taken
 * at once, the deadline would fail work that was answered in time, and a query's deadline would
 * declare the database away when only this process had stopped.
 */
export function withDeadline<T>(work: Promise<T>, ms: number, late: () => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let afterIo: NodeJS.Immediate | undefined;
  let answered = false;
  const deadline = new Promise<T>((resolve, reject) => {
    timer = setTimeout(() => {
      // Immediates run after the event loop's next poll for I/O: an answer already in a socket settles `work` first.
      afterIo = setImmediate(() => {
        if (answered) return;
        try {
          resolve(late());
        } catch (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      });
    }, ms);
  });
  const settled = () => {
    answered = true;
  };
  work.then(settled, settled);
  return Promise.race([work, deadline]).finally(() => {
    clearTimeout(timer);
    clearImmediate(afterIo);
  });
}
