/* The audit log screen: every operator action, filtered by operator, action or target. */
import type { AuditEntryView } from '../../schemas/back-office.schema.js';
import { byId, el } from '../page-ui/page-ui.js';
import { queryString, shortId } from '../page-ui/page-format.js';
import type { ConsoleContext } from './console-context.js';
import { auditChange } from './console.format.js';
import { createList, timeCell, type ListPage } from './console-table.ui.js';

/** Target ids longer than this (UUIDs) are shortened, the whole one in the title. */
const SHORT_TARGET = 12;

function changeCell(entry: AuditEntryView): HTMLTableCellElement {
  const td = el('td', { class: 'change' });
  const change = auditChange(entry);
  if (change.kind === 'changes') {
    if (change.changes.length === 0) td.append(el('span', { class: 'sub', text: 'no change' }));
    for (const c of change.changes) {
      td.append(el('div', {}, el('span', { class: 'k', text: c.key }), ': ', el('span', { class: 'old', text: c.before }), el('span', { class: 'arrow', text: '→' }), el('span', { class: 'new', text: c.after })));
    }
  } else if (change.kind === 'summary') {
    td.append(el('div', {}, el('span', { class: 'sub summary', text: `${change.label}: ` }), el('span', { class: 'mono', text: change.fields })));
  } else {
    td.append(el('span', { class: 'sub', text: '—' }));
  }
  if (change.kind !== 'none') {
    const json = `before: ${JSON.stringify(entry.before, null, 1)}\nafter:  ${JSON.stringify(entry.after, null, 1)}`;
    td.append(el('details', { class: 'json' }, el('summary', { text: 'before / after' }), el('pre', { text: json })));
  }
  return td;
}

function auditRow(a: AuditEntryView): HTMLTableRowElement {
  return el('tr', { class: 'audit-row', dataset: { id: a.id, action: a.action, operator: a.operator, targetId: a.targetId } },
    timeCell(a.createdAt),
    el('td', { class: 'operator', text: a.operator }),
    el('td', {}, el('span', { class: 'badge action', text: a.action })),
    el('td', { class: 'nowrap' }, el('span', { class: 'sub', text: `${a.targetType} ` }), el('span', { class: 'id', title: a.targetId, text: a.targetId.length > SHORT_TARGET ? shortId(a.targetId) : a.targetId })),
    changeCell(a));
}

export function createAuditScreen(ctx: ConsoleContext): { load(): Promise<void> } {
  const operator = byId<HTMLInputElement>('audit-operator');
  const action = byId<HTMLSelectElement>('audit-action');
  const target = byId<HTMLInputElement>('audit-target');
  const list = createList<AuditEntryView>({
    table: byId<HTMLTableElement>('audit-table'),
    more: byId<HTMLButtonElement>('audit-more'),
    count: byId('audit-count'),
    noun: 'audit entries',
    empty: () => (operator.value.trim() || action.value || target.value.trim() ? 'No audit entry matches these filters.' : 'No operator action recorded yet.'),
    load: (cursor) => ctx.api.data<ListPage<AuditEntryView>>('GET', `/admin/audit${queryString({ operator: operator.value, action: action.value, targetId: target.value, cursor })}`),
    row: auditRow,
  }, ctx.errors);
  byId('audit-form').addEventListener('submit', (e) => {
    e.preventDefault();
    void list.load();
  });
  action.addEventListener('change', () => void list.load());
  return { load: () => list.load() };
}
