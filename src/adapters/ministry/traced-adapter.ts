import type { Tracer } from '../../domain/tracer.port.js';
import type { MinistryAdapters } from '../../domain/ministry.port.js';
import { wrapAdapters } from './adapter-wrapper.js';

/**
 * Each ministry call as a client span naming the system and the operation, never the reference
 * or the payer it asks about; the call's HTTP request carries this span as its traceparent.
 */
export function traceAdapters(adapters: MinistryAdapters, tracer: Tracer): MinistryAdapters {
  return wrapAdapters(adapters, (source) => (operation, call) => {
    const options = { kind: 'client' as const, attributes: { 'ministry.system': source, 'ministry.operation': operation } };
    const name = `ministry ${source} ${operation}`;
    return (...args) => tracer.span(name, options, () => call(...args));
  });
}
