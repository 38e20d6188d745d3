/* The partners screen: create a partner, change its QR standard and rate limits, rotate its key, (de)activate it. */
import type { Static } from 'typebox';
import type { CreatedPartnerBody, RotatedKeyBody } from '../../schemas/admin.schema.js';
import { QR_STANDARDS } from '../../domain/vocabulary.js';
import { byId, el } from '../page-ui/page-ui.js';
import { formatLocalTime } from '../page-ui/page-format.js';
import type { ConsoleContext, Partner } from './console-context.js';
import { LIMIT_FIELDS, limitsText } from './console.format.js';
import { badge, busy, createList, timeCell, twoStep } from './console-table.ui.js';

const COPIED_MS = 2500;

export interface PartnersScreen {
  load(): Promise<void>;
  /** Forgets a shown key (sign-out). */
  hideKey(): void;
}

function keyNotice() {
  const notice = byId('key-notice');
  const value = byId('key-value');
  const copy = byId('key-copy');
  const hide = () => {
    value.textContent = '';
    notice.hidden = true;
  };
  byId('key-dismiss').addEventListener('click', hide);
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(value.textContent ?? '');
      copy.textContent = 'Copied';
    } catch {
      // No clipboard (a plain-http page): select the key so Ctrl+C copies it.
      const range = document.createRange();
      range.selectNodeContents(value);
      getSelection()?.removeAllRanges();
      getSelection()?.addRange(range);
      copy.textContent = 'Selected — press Ctrl+C';
    }
    setTimeout(() => (copy.textContent = 'Copy'), COPIED_MS);
  });
  const show = (title: string, explain: string, key: string) => {
    byId('key-title').textContent = title;
    byId('key-explain').textContent = explain;
    value.textContent = key;
    notice.hidden = false;
    notice.scrollIntoView({ block: 'nearest' });
  };
  return { show, hide };
}

type KeyNotice = ReturnType<typeof keyNotice>;

/** What a partner row needs: the console, and the key notice a rotation fills. */
interface RowKit {
  ctx: ConsoleContext;
  key: KeyNotice;
}

const partnerPath = (p: Partner, tail = '') => `/admin/partners/${encodeURIComponent(p.id)}${tail}`;

function replaceRow(kit: RowKit, tr: HTMLTableRowElement, updated: Partner): void {
  const { partners } = kit.ctx;
  const merged = { ...partners.get(updated.id), ...updated };
  partners.remember(partners.all().map((p) => (p.id === merged.id ? merged : p)));
  const next = partnerRow(kit, merged);
  next.classList.add('flash');
  tr.replaceWith(next);
}

function qrSelect(kit: RowKit, p: Partner, tr: HTMLTableRowElement): HTMLSelectElement {
  const select = el('select', { class: 'qr-select', 'aria-label': `QR standard of ${p.name}` },
    ...QR_STANDARDS.map((v) => el('option', { value: v, text: v, selected: v === p.qrStandard })));
  select.addEventListener('change', async () => {
    select.disabled = true;
    try {
      const updated = await kit.ctx.api.data<Partner>('PATCH', partnerPath(p), { qrStandard: select.value });
      replaceRow(kit, tr, updated);
      kit.ctx.notify(`${p.name}: QR standard is now ${updated.qrStandard}`);
    } catch (err) {
      select.value = p.qrStandard;
      select.disabled = false;
      kit.ctx.errors.show(err, `Changing the QR standard of ${p.name}`);
    }
  });
  return select;
}

function activeToggle(kit: RowKit, p: Partner, tr: HTMLTableRowElement): HTMLButtonElement {
  const toggle = el('button', { type: 'button', class: `small toggle-active ${p.active ? 'danger' : 'secondary'}`, text: p.active ? 'Deactivate' : 'Activate' });
  const setActive = () =>
    busy(toggle, p.active ? 'Deactivating…' : 'Activating…', async () => {
      try {
        const updated = await kit.ctx.api.data<Partner>('PATCH', partnerPath(p), { active: !p.active });
        replaceRow(kit, tr, updated);
        kit.ctx.notify(`${p.name} is now ${updated.active ? 'active' : 'inactive'}`);
      } catch (err) {
        kit.ctx.errors.show(err, `Changing ${p.name}`);
      }
    });
  // Only deactivating cuts a partner off: activating needs no second click.
  if (p.active) return twoStep(toggle, 'Confirm deactivate', () => void setActive());
  toggle.addEventListener('click', () => void setActive());
  return toggle;
}

type RateLimits = NonNullable<Partner['rateLimits']>;
/** Limits as the editor read them: an empty box is null, which the admin API refuses by name. */
type TypedLimits = Record<keyof RateLimits, number | null>;

/** Saves a partner's limits (null: back to the defaults) and shows the row it comes back as. */
async function saveLimits(kit: RowKit, p: Partner, tr: HTMLTableRowElement, rateLimits: TypedLimits | null): Promise<void> {
  try {
    const updated = await kit.ctx.api.data<Partner>('PATCH', partnerPath(p), { rateLimits });
    replaceRow(kit, tr, updated);
    kit.ctx.notify(`${p.name}: rate limits are now ${limitsText(updated.rateLimits)}`);
  } catch (err) {
    kit.ctx.errors.show(err, `Changing the rate limits of ${p.name}`);
  }
}

/**
 * The limits of a row, and an editor for them in place: the three numbers are sent as typed, so
 * the admin API's validation names whatever is wrong with them.
 */
function limitsCell(kit: RowKit, p: Partner, tr: HTMLTableRowElement): HTMLTableCellElement {
  const td = el('td', { class: 'limits nowrap' });
  const show = () => {
    const edit = el('button', { type: 'button', class: 'small secondary edit-limits', text: 'Edit', 'aria-label': `Edit the rate limits of ${p.name}` });
    edit.addEventListener('click', openEditor);
    td.replaceChildren(el('span', { class: p.rateLimits ? 'limits-text' : 'limits-text sub', text: limitsText(p.rateLimits) }), ' ', edit);
  };
  function openEditor() {
    const inputs = LIMIT_FIELDS.map(([key, unit, label]) =>
      el('input', { type: 'number', min: 1, step: 1, class: `limit-input ${key}`, name: key, 'aria-label': `Requests ${label} for ${p.name}`, value: p.rateLimits?.[key] ?? '', placeholder: unit }));
    const save = el('button', { type: 'submit', class: 'small save-limits', text: 'Save' });
    const reset = el('button', { type: 'button', class: 'small secondary default-limits', text: 'Use default', disabled: !p.rateLimits });
    const cancel = el('button', { type: 'button', class: 'small secondary cancel-limits', text: 'Cancel', onclick: show });
    const form = el('form', { class: 'limits-form' }, ...inputs.flatMap((input, i) => [input, LIMIT_FIELDS[i]?.[1] ?? '']), ' ', save, reset, cancel);
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const [perSecond = null, perMinute = null, perHour = null] = inputs.map((input) => (input.value.trim() === '' ? null : Number(input.value)));
      void busy(save, 'Saving…', () => saveLimits(kit, p, tr, { perSecond, perMinute, perHour }));
    });
    reset.addEventListener('click', () => void busy(reset, 'Resetting…', () => saveLimits(kit, p, tr, null)));
    td.replaceChildren(form);
    // Without scrolling: the table fits, and a scroll would move the Name column out of sight.
    inputs[0]?.focus({ preventScroll: true });
  }
  show();
  return td;
}

function rotateButton(kit: RowKit, p: Partner): HTMLButtonElement {
  const rotate = el('button', { type: 'button', class: 'small secondary rotate-key', text: 'Rotate key' });
  return twoStep(rotate, 'Confirm rotate', () =>
    void busy(rotate, 'Rotating…', async () => {
      try {
        const r = await kit.ctx.api.data<Static<typeof RotatedKeyBody>>('POST', partnerPath(p, '/keys'));
        kit.key.show(`New API key for ${p.name}`, `the partner's previous keys stop working at ${formatLocalTime(r.previousKeysExpireAt)}.`, r.apiKey);
      } catch (err) {
        kit.ctx.errors.show(err, `Rotating the key of ${p.name}`);
      }
    }),
  );
}

function partnerRow(kit: RowKit, p: Partner): HTMLTableRowElement {
  const { nav } = kit.ctx;
  const tr = el('tr', { class: `partner-row${p.active ? '' : ' inactive'}`, dataset: { id: p.id, active: p.active, qrStandard: p.qrStandard, limits: limitsText(p.rateLimits) } });
  const goPayments = el('button', { type: 'button', class: 'small secondary show-payments', text: 'Payments', onclick: () => nav.paymentsOf(p.id) });
  const goDeliveries = el('button', { type: 'button', class: 'small secondary show-deliveries', text: 'Deliveries', onclick: () => nav.deliveriesOf(p.id) });
  tr.append(
    el('td', {}, el('strong', { class: 'partner-name', text: p.name })),
    el('td', { class: 'partner-id' }, el('span', { class: 'id', text: p.id })),
    el('td', {}, qrSelect(kit, p, tr)),
    el('td', {}, badge(p.environment)),
    el('td', {}, badge(p.active ? 'active' : 'inactive')),
    limitsCell(kit, p, tr),
    timeCell(p.createdAt),
    el('td', { class: 'actions paired' }, el('div', { class: 'pair' }, goPayments, goDeliveries, rotateButton(kit, p), activeToggle(kit, p, tr))),
  );
  return tr;
}

async function createPartner(kit: RowKit, list: { load(): Promise<void> }, name: string): Promise<void> {
  const { api, errors } = kit.ctx;
  try {
    const body = { name, qrStandard: byId<HTMLSelectElement>('partner-qr').value, environment: byId<HTMLSelectElement>('partner-env').value };
    const created = await api.data<Static<typeof CreatedPartnerBody>>('POST', '/admin/partners', body);
    errors.clear();
    byId<HTMLFormElement>('partner-form').reset();
    kit.key.show(`API key for ${created.name}`, `new ${created.environment} partner ${created.id}.`, created.apiKey);
    await list.load();
    document.querySelector(`#partners-table tr[data-id="${CSS.escape(created.id)}"]`)?.classList.add('flash');
  } catch (err) {
    errors.show(err, 'Creating a partner');
  }
}

export function createPartnersScreen(ctx: ConsoleContext): PartnersScreen {
  const kit: RowKit = { ctx, key: keyNotice() };
  const list = createList<Partner>({
    table: byId<HTMLTableElement>('partners-table'),
    count: byId('partners-count'),
    noun: 'partners',
    empty: 'No partners yet. Create the first one above.',
    load: async () => {
      const items = await ctx.api.data<Partner[]>('GET', '/admin/partners');
      ctx.partners.remember(items);
      return { items };
    },
    row: (p) => partnerRow(kit, p),
  }, ctx.errors);
  byId('partners-refresh').addEventListener('click', () => void list.load());
  byId('partner-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const name = byId<HTMLInputElement>('partner-name').value.trim();
    if (!name) return ctx.errors.show(new Error('give the partner a name'), 'Creating a partner');
    void busy(byId<HTMLButtonElement>('partner-create'), 'Creating…', () => createPartner(kit, list, name));
  });
  return { load: () => list.load(), hideKey: kit.key.hide };
}
