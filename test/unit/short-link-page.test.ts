import { runInNewContext } from 'node:vm';
import { beforeAll, describe, expect, it } from 'vitest';
import { bundlePageScript } from '../../src/http/page-script.bundler.js';
import { UNRESOLVED_STATUSES } from '../../src/payments/payment.machine.js';
import { SHORT_LINK_STATUSES } from '../../src/schemas/short-link.schema.js';

/*
 * The QR landing page's bundled script, run against just the parts of a page it touches: which
 * statuses end its polling and take the QR away must be the service's own, whatever the bundle
 * was written from.
 */

interface Outcome {
  status: string | null;
  /** The QR and bank links are still on the page. */
  pay: boolean;
  /** A next poll is scheduled. */
  polling: boolean;
  polls: number;
}

let code: string;
beforeAll(async () => {
  code = await bundlePageScript('short-link');
});

/** Opens a page in `status` and answers its first poll, if it makes one, with `next`. */
async function openAndPoll(status: string, next: unknown): Promise<Outcome> {
  const attributes = new Map<string, string>([['data-status', status]]);
  const timers = new Map<number, () => void>();
  let pay = true;
  let polls = 0;
  let lastTimer = 0;
  const page = {
    document: {
      hidden: false,
      body: {
        getAttribute: (name: string) => attributes.get(name) ?? null,
        setAttribute: (name: string, value: string) => attributes.set(name, value),
        classList: { add: () => undefined, remove: () => undefined },
      },
      getElementById: (id: string) => (id === 'pay' && pay ? { remove: () => (pay = false) } : null),
      addEventListener: () => undefined,
    },
    location: { pathname: '/q/3f0c2a9e-8d7b-4c1e-9f3a-5b6d7e8f9a0b' },
    fetch: async (url: string) => {
      expect(url).toBe('/q/3f0c2a9e-8d7b-4c1e-9f3a-5b6d7e8f9a0b/status');
      polls++;
      return { ok: true, status: 200, json: async () => ({ status: next }) };
    },
    setTimeout: (run: () => void) => {
      timers.set(++lastTimer, run);
      return lastTimer;
    },
    clearTimeout: (id: number) => timers.delete(id),
  };
  runInNewContext(code, page);
  const first = [...timers.entries()][0];
  if (first) {
    timers.delete(first[0]);
    first[1]();
    await new Promise((resolve) => setImmediate(resolve));
  }
  return { status: attributes.get('data-status') ?? null, pay, polling: timers.size > 0, polls };
}

describe('QR landing page script', () => {
  it('is one self-contained script that names no partner, payer or invoice', () => {
    expect(code).not.toMatch(/^\s*import\s|\brequire\(/m);
    expect(code).not.toMatch(/payer|partner|invoiceId|refNum|ref_num/i);
  });

  it.each(SHORT_LINK_STATUSES)('after a poll answering %s, polls on and keeps the QR exactly while the payment is unresolved', async (next) => {
    const unresolved = (UNRESOLVED_STATUSES as readonly string[]).includes(next);
    expect(await openAndPoll('submitted', next)).toEqual({ status: next, pay: unresolved, polling: unresolved, polls: 1 });
  });

  it.each(SHORT_LINK_STATUSES)('opened showing %s, polls only while the payment is unresolved', async (status) => {
    const unresolved = (UNRESOLVED_STATUSES as readonly string[]).includes(status);
    expect((await openAndPoll(status, status)).polls).toBe(unresolved ? 1 : 0);
  });

  it('shows a status it does not know without ending the payment, and ignores an answer that is not one', async () => {
    expect(await openAndPoll('submitted', 'refunded')).toEqual({ status: 'refunded', pay: true, polling: true, polls: 1 });
    expect(await openAndPoll('submitted', 42)).toEqual({ status: 'submitted', pay: true, polling: true, polls: 1 });
  });
});
