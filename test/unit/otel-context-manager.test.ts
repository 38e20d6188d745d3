import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { context, createContextKey, ROOT_CONTEXT } from '@opentelemetry/api';
import { SlotContextManager } from '../../src/adapters/tracing/otel.context-manager.js';
import { createAsyncContext } from '../../src/primitives/async-context.js';

const KEY = createContextKey('test');
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

function managerWithSlot() {
  const asyncContext = createAsyncContext();
  const other = asyncContext.slot<string>();
  return { manager: new SlotContextManager(asyncContext.slot()), other };
}

describe("OpenTelemetry's context in a slot of the process's async context", () => {
  it('is active inside with, through what it starts, and gone after, beside the other slots', async () => {
    const { manager, other } = managerWithSlot();
    const ctx = ROOT_CONTEXT.setValue(KEY, 'request');
    const seen: unknown[] = [];
    await other.run('background', () =>
      manager.with(ctx, async (a: number, b: number) => {
        await tick();
        seen.push(manager.active().getValue(KEY), other.get(), a + b);
      }, undefined, 1, 2),
    );
    seen.push(manager.active().getValue(KEY), other.get());
    expect(seen).toEqual(['request', 'background', 3, undefined, undefined]);
  });

  it('binds a callback and an event emitter to the context they were bound in', async () => {
    const { manager } = managerWithSlot();
    const ctx = ROOT_CONTEXT.setValue(KEY, 'bound');
    const callback = manager.bind(ctx, () => manager.active().getValue(KEY));
    const emitter = manager.bind(ctx, new EventEmitter());
    const heard: unknown[] = [];
    emitter.on('data', () => heard.push(manager.active().getValue(KEY)));
    await tick();
    expect(callback()).toBe('bound');
    emitter.emit('data');
    expect(heard).toEqual(['bound']);
    expect(manager.active()).toBe(ROOT_CONTEXT);
  });

  it('serves the API as its global context manager', () => {
    const { manager } = managerWithSlot();
    context.setGlobalContextManager(manager);
    try {
      const ctx = ROOT_CONTEXT.setValue(KEY, 'global');
      expect(context.with(ctx, () => context.active().getValue(KEY))).toBe('global');
      expect(context.active()).toBe(ROOT_CONTEXT);
    } finally {
      context.disable();
    }
  });
});
