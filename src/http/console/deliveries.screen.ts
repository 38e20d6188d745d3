/* The deliveries screen: webhook deliveries across partners, redelivering one, and the pushes by status. */
import type { AdminDeliveryView, PushCountsView } from '../../schemas/back-office.schema.js';
import { byId, el } from '../page-ui/page-ui.js';
import { queryString, shortId } from '../page-ui/page-format.js';
import type { ConsoleContext } from './console-context.js';
import { badge, busy, createList, timeCell, type ListPage } from './console-table.ui.js';

export interface DeliveriesScreen {
  load(): Promise<void>;
  /** Sets the filters to every delivery of one partner (the screen loads when shown). */
  filterPartner(partnerId: string): void;
}

function lastResult(d: AdminDeliveryView): HTMLTableCellElement {
  const code = d.lastStatusCode;
  const last = code !== null ? el('span', { class: `mono ${code >= 200 && code < 300 ? 'text-ok' : 'text-bad'}`, text: `HTTP ${code}` }) : null;
  return el('td', {}, last, d.lastError ? el('div', { class: 'sub text-bad', text: d.lastError }) : null, !last && !d.lastError ? el('span', { class: 'sub', text: '—' }) : null);
}

/** The webhook's url, and whether it is disabled: its pending deliveries wait until the partner enables it. */
function urlCell(d: AdminDeliveryView): HTMLTableCellElement {
  const disabled = d.webhookDisabledReason
    ? el('div', { class: 'sub' }, badge(`webhook disabled: ${d.webhookDisabledReason}`, d.webhookDisabledReason === 'failing' ? 'failed' : 'inactive'))
    : null;
  return el('td', { class: 'url' }, d.url, disabled);
}

/** Loads the pushes by status of the partner filtered on; `skipped` is shown apart from `delivered`, since nothing was sent. */
function pushCountsLoader({ api, errors }: ConsoleContext, partnerInput: HTMLInputElement): () => Promise<void> {
  const pushCounts = byId('push-counts');
  return async () => {
    try {
      const counts = await api.data<PushCountsView>('GET', `/admin/pushes${queryString({ partnerId: partnerInput.value })}`);
      pushCounts.replaceChildren(
        ...(['delivered', 'skipped', 'pending', 'failed'] as const).map((status) =>
          el('span', { class: 'push-count', dataset: { status }, text: `${status} ${counts[status]}  ` }),
        ),
      );
    } catch (err) {
      errors.show(err, 'Loading push counts');
    }
  };
}

export function createDeliveriesScreen(ctx: ConsoleContext): DeliveriesScreen {
  const { api, errors, notify, partners } = ctx;
  const partnerInput = byId<HTMLInputElement>('del-partnerId');
  const statusInput = byId<HTMLSelectElement>('del-status');

  function deliveryRow(d: AdminDeliveryView): HTMLTableRowElement {
    const tr = el('tr', { class: 'delivery-row', dataset: { id: d.id, status: d.status, attempts: d.attempts } });
    const redeliver = el('button', { type: 'button', class: 'small secondary redeliver', text: 'Redeliver' });
    redeliver.addEventListener('click', () =>
      void busy(redeliver, 'Queuing…', async () => {
        try {
          const queued = await api.data<AdminDeliveryView>('POST', `/admin/deliveries/${encodeURIComponent(d.id)}/redeliver`);
          errors.clear();
          const next = deliveryRow(queued);
          next.classList.add('flash');
          tr.replaceWith(next);
          notify(`Delivery of ${d.event} to ${d.url} queued again`);
        } catch (err) {
          errors.show(err, 'Redelivering');
        }
      }),
    );
    tr.append(
      timeCell(d.createdAt),
      partners.cell(d.partnerId),
      el('td', { class: 'mono nowrap' }, d.event, el('div', { class: 'sub', title: d.eventId, text: `event ${shortId(d.eventId)}` })),
      urlCell(d),
      el('td', {}, badge(d.status, d.status === 'pending' ? 'pending-delivery' : d.status)),
      el('td', { class: 'num', text: String(d.attempts) }),
      lastResult(d),
      d.status === 'pending' ? timeCell(d.nextAttemptAt) : el('td', { class: 'sub', text: '—' }),
      timeCell(d.deliveredAt),
      el('td', { class: 'actions' }, redeliver));
    return tr;
  }

  const list = createList<AdminDeliveryView>({
    table: byId<HTMLTableElement>('deliveries-table'),
    more: byId<HTMLButtonElement>('deliveries-more'),
    count: byId('deliveries-count'),
    noun: 'deliveries',
    empty: () => (partnerInput.value.trim() || statusInput.value ? 'No delivery matches these filters.' : 'No webhook deliveries yet.'),
    load: (cursor) => api.data<ListPage<AdminDeliveryView>>('GET', `/admin/deliveries${queryString({ partnerId: partnerInput.value, status: statusInput.value, cursor })}`),
    row: deliveryRow,
  }, errors);

  const loadPushCounts = pushCountsLoader(ctx, partnerInput);
  const load = async () => {
    await Promise.all([list.load(), loadPushCounts()]);
  };

  byId('deliveries-form').addEventListener('submit', (e) => {
    e.preventDefault();
    void load();
  });
  byId('deliveries-clear').addEventListener('click', () => {
    partnerInput.value = '';
    statusInput.value = '';
    void load();
  });

  return {
    load,
    filterPartner(partnerId) {
      partnerInput.value = partnerId;
      statusInput.value = '';
    },
  };
}
