import { describe, expect, it } from 'vitest';
import { createAsyncContext } from '../../src/primitives/async-context.js';
import { createWorkPriority } from '../../src/db/work-priority.js';
import { createLocalTracer } from '../../src/adapters/tracing/local.tracer.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('one async context shared by its slots', () => {
  it('keeps each slot its own value, inherited by what is started, and restored after', async () => {
    const context = createAsyncContext();
    const a = context.slot<string>();
    const b = context.slot<number>();
    const seen: unknown[] = [];
    await a.run('outer', async () => {
      await b.run(1, async () => {
        await tick();
        seen.push([a.get(), b.get()]);
        await a.run('inner', async () => {
          await tick();
          seen.push([a.get(), b.get()]);
        });
        seen.push([a.get(), b.get()]);
      });
      seen.push([a.get(), b.get()]);
    });
    seen.push([a.get(), b.get()]);
    expect(seen).toEqual([
      ['outer', 1],
      ['inner', 1],
      ['outer', 1],
      ['outer', undefined],
      [undefined, undefined],
    ]);
  });

  it('keeps the background mark through a span, and the span through background work', async () => {
    const context = createAsyncContext();
    const priority = createWorkPriority(context.slot());
    const tracer = createLocalTracer(context.slot());
    const request = tracer.startRequest(undefined, undefined);
    const seen: { background: boolean; traceId: string | undefined }[] = [];
    const look = () => seen.push({ background: priority.isBackground(), traceId: tracer.active()?.traceId });
    await priority.background(() => tracer.span('pass', {}, async () => {
      await tick();
      look();
    }));
    await new Promise<void>((resolve) => {
      tracer.enterRequest(request, () => {
        void priority.background(async () => {
          await tick();
          look();
        }).then(() => {
          look();
          resolve();
        });
      });
    });
    look();
    expect(seen[0]?.background).toBe(true);
    expect(seen[0]?.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(seen.slice(1)).toEqual([
      { background: true, traceId: request.traceId },
      { background: false, traceId: request.traceId },
      { background: false, traceId: undefined },
    ]);
  });
});
