import { describe, expect, it } from 'vitest';
import Fastify from 'fastify';
import { registerRequestActivity } from '../../src/http/plugins/request-activity.plugin.js';
import { createWorkPriority } from '../../src/db/work-priority.js';

describe('requests being served', () => {
  it('counts a request while its handler runs and not once it is answered, failed or not', async () => {
    const priority = createWorkPriority();
    const app = Fastify();
    registerRequestActivity(app, priority);
    const seen: number[] = [];
    app.get('/ok', async () => {
      seen.push(priority.requestsInFlight());
      return { ok: true };
    });
    app.get('/fails', async () => {
      seen.push(priority.requestsInFlight());
      throw new Error('boom');
    });
    await Promise.all([app.inject('/ok'), app.inject('/fails'), app.inject('/missing')]);
    expect(seen.length).toBe(2);
    expect(Math.min(...seen)).toBeGreaterThanOrEqual(1);
    expect(priority.requestsInFlight()).toBe(0);
    await app.close();
  });

  it('counts requests over a real connection until their response closes', async () => {
    const priority = createWorkPriority();
    const app = Fastify();
    registerRequestActivity(app, priority);
    let during = 0;
    app.get('/ok', async () => {
      during = priority.requestsInFlight();
      return { ok: true };
    });
    const origin = await app.listen({ port: 0, host: '127.0.0.1' });
    expect((await fetch(`${origin}/ok`)).status).toBe(200);
    await new Promise<void>((resolve) => priority.whenIdle(resolve));
    expect(during).toBe(1);
    expect(priority.requestsInFlight()).toBe(0);
    await app.close();
  });
});
