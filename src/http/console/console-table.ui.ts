/* The console's building blocks: cells, list tables with their states, a payment's timeline, two-step buttons, busy buttons. */
import type { AdminPaymentDetailView } from '../../schemas/back-office.schema.js';
import { describeError, el, type ErrorBox } from '../page-ui/page-ui.js';
import { compactJson, financeDayLabel, formatLocalTime, shortId } from '../page-ui/page-format.js';
import { createArming } from './console.format.js';

export type TableState = 'idle' | 'loading' | 'ready' | 'empty' | 'error';

/**
 * A moment in local time. Its date and clock may go on two lines, so a table of several times
 * still fits a laptop's width; each stays whole.
 */
export function timeCell(iso: string | null | undefined): HTMLTableCellElement {
  const [date = '', clock] = formatLocalTime(iso).split(' ');
  return el('td', { class: 'time', title: iso ?? null }, el('span', { text: date }), clock ? ' ' : null, clock ? el('span', { text: clock }) : null);
}

/** A moment whose day is meant (a payment's creation, its settlement): beneath its local time, the finance day when that clock is not Ulaanbaatar's. */
export function dayTimeCell(iso: string | null | undefined): HTMLTableCellElement {
  const td = timeCell(iso);
  const label = iso ? financeDayLabel(iso, new Date(iso).getTimezoneOffset()) : null;
  if (label) td.append(el('div', { class: 'finance-day sub', text: label }));
  return td;
}

export const idSpan = (id: string | null | undefined) => (id ? el('span', { class: 'id', title: id, text: shortId(id) }) : el('span', { class: 'sub', text: '—' }));

export const badge = (value: string, extraClass?: string) => el('span', { class: `badge ${extraClass ?? value}`, dataset: { status: value }, text: value });

/** Puts a table in loading, empty or error state (one explanatory row), or marks it ready. */
export function setTableState(table: HTMLTableElement, state: TableState, message = ''): void {
  table.dataset.state = state;
  if (state === 'ready') return;
  const td = el('td', { colspan: table.tHead?.rows[0]?.cells.length ?? 1 });
  if (state === 'loading') td.append(el('span', { class: 'spinner' }), message || 'Loading…');
  else td.textContent = message;
  table.tBodies[0]?.replaceChildren(el('tr', { class: `state-row ${state}` }, td));
}

type TimelineEntry = AdminPaymentDetailView['timeline'][number];

function timelineRow(t: TimelineEntry, i: number): HTMLTableRowElement {
  return el('tr', { class: 'timeline-row', dataset: { from: t.from ?? '', to: t.to, cause: t.cause, event: t.event } },
    el('td', { class: 'num sub', text: String(i + 1) }),
    timeCell(t.at),
    el('td', { class: 'nowrap' }, t.from ? badge(t.from) : el('span', { class: 'sub', text: 'new' }), el('span', { class: 'arrow', text: '→' }), badge(t.to)),
    el('td', { class: 'mono', text: t.event }),
    el('td', { class: 'mono', text: t.cause }),
    el('td', {}, t.detail ? el('code', { class: 'json', text: compactJson(t.detail) }) : el('span', { class: 'sub', text: '—' })));
}

/** A payment's moves in order, each with the ministry's answer behind it (the payment's detail, a case's evidence). */
export function timelineTable(entries: readonly TimelineEntry[], id = 'timeline'): HTMLTableElement {
  const table = el('table', { id },
    el('thead', {}, el('tr', {}, ...['#', 'At', 'Transition', 'Event', 'Cause', 'Ministry answer / detail'].map((h) => el('th', { text: h })))),
    el('tbody', {}, ...entries.map(timelineRow)));
  if (entries.length === 0) setTableState(table, 'empty', 'No state changes recorded for this payment.');
  else table.dataset.state = 'ready';
  return table;
}

/** A page of a list as the admin API answers it. */
export interface ListPage<T> {
  items: T[];
  nextCursor?: string | null;
}

export interface ListOptions<T> {
  table: HTMLTableElement;
  /** Loads the next page; absent for lists the service answers whole. */
  more?: HTMLButtonElement;
  count: HTMLElement;
  noun: string;
  empty: string | (() => string);
  /** The page after `cursor` (null: the first); it may throw to refuse the filters before anything is sent. */
  load: (cursor: string | null) => Promise<ListPage<T>>;
  row: (item: T) => HTMLTableRowElement;
  /** The most the service lists (no paging): the count says so when it is reached. */
  cap?: number;
}

export interface ListController<T> {
  load(): Promise<void>;
  readonly items: readonly T[];
}

function countText(shown: number, more: boolean, cap: number | undefined): string {
  if (shown === 0) return '';
  const capped = cap && shown >= cap ? ` (the service lists at most ${cap}: narrow the filters)` : '';
  return `${shown} shown${more ? ', more available' : ''}${capped}`;
}

/**
 * One list screen: loads a first page into the table, or the next page after it (More), shows
 * its loading, empty and error states, and ignores answers to requests a later one replaced.
 */
export function createList<T>(options: ListOptions<T>, errors: ErrorBox): ListController<T> {
  const { table, more, count, noun } = options;
  const body = () => table.tBodies[0] ?? table.createTBody();
  let seq = 0;
  let cursor: string | null = null;
  let items: T[] = [];

  function starting(append: boolean): void {
    if (append && more) {
      more.disabled = true;
      more.textContent = 'Loading…';
      return;
    }
    cursor = null;
    setTableState(table, 'loading', `Loading ${noun}…`);
    if (more) more.hidden = true;
    count.textContent = '';
  }

  function show(page: ListPage<T>, append: boolean): void {
    if (!append) {
      items = [];
      body().replaceChildren();
    }
    items.push(...page.items);
    cursor = page.nextCursor ?? null;
    for (const item of page.items) body().append(options.row(item));
    if (items.length === 0) setTableState(table, 'empty', typeof options.empty === 'function' ? options.empty() : options.empty);
    else table.dataset.state = 'ready';
    if (more) more.hidden = !cursor;
    count.textContent = countText(items.length, cursor !== null, options.cap);
  }

  async function load(append: boolean): Promise<void> {
    const mine = ++seq;
    starting(append);
    try {
      const page = await options.load(append ? cursor : null);
      if (mine === seq) show(page, append);
    } catch (err) {
      if (mine !== seq) return;
      if (!append) setTableState(table, 'error', `Could not load ${noun}: ${describeError(err)}`);
      errors.show(err, `Loading ${noun}`);
    } finally {
      if (more && mine === seq) {
        more.disabled = false;
        more.textContent = 'More';
      }
    }
  }

  more?.addEventListener('click', () => void load(true));
  return {
    load: () => load(false),
    get items() {
      return items;
    },
  };
}

const arming = createArming();
const ARMED_MS = 5000;

/** A destructive button asks for a second click before it acts; arming it disarms any other. */
export function twoStep(button: HTMLButtonElement, confirmLabel: string, action: () => void): HTMLButtonElement {
  const label = button.textContent ?? '';
  let timer: ReturnType<typeof setTimeout> | undefined;
  const disarm = () => {
    clearTimeout(timer);
    button.classList.remove('armed');
    button.textContent = label;
    arming.release(disarm);
  };
  button.addEventListener('click', () => {
    if (!button.classList.contains('armed')) {
      button.classList.add('armed');
      button.textContent = confirmLabel;
      arming.arm(disarm);
      timer = setTimeout(disarm, ARMED_MS);
      return;
    }
    disarm();
    action();
  });
  return button;
}

/** Disables the button and shows `label` while `work` runs. */
export async function busy<T>(button: HTMLButtonElement, label: string, work: () => Promise<T>): Promise<T> {
  const before = button.textContent;
  button.disabled = true;
  button.textContent = label;
  try {
    return await work();
  } finally {
    button.disabled = false;
    button.textContent = before;
  }
}
