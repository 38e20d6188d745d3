/* What the console's screens share: the admin API client, the error box and notice, partner names, and moving between screens. */
import type { Static } from 'typebox';
import type { PartnerBody } from '../../schemas/admin.schema.js';
import { byId, el, type ApiClient, type ErrorBox } from '../page-ui/page-ui.js';
import { shortId } from '../page-ui/page-format.js';

export type Partner = Static<typeof PartnerBody>;

export const TABS = ['partners', 'payments', 'cases', 'reconciliation', 'deliveries', 'audit'] as const;
export type Tab = (typeof TABS)[number];
export const isTab = (name: string): name is Tab => (TABS as readonly string[]).includes(name);

/** Moves between screens; the entry module wires it once every screen exists. */
export interface Navigation {
  showTab(tab: Tab): void;
  /** The payments screen, with the payment's detail and timeline open. */
  openPayment(id: string): void;
  paymentsOf(partnerId: string): void;
  deliveriesOf(partnerId: string): void;
}

/** The partners as last listed: their names on every screen, and the partner ID suggestions. */
export interface PartnerNames {
  remember(list: readonly Partner[]): void;
  get(id: string): Partner | undefined;
  all(): Partner[];
  cell(id: string | null): HTMLTableCellElement;
}

export interface ConsoleContext {
  api: ApiClient;
  errors: ErrorBox;
  notify(text: string): void;
  partners: PartnerNames;
  nav: Navigation;
}

export function createPartnerNames(): PartnerNames {
  const partners = new Map<string, Partner>();
  return {
    remember(list) {
      partners.clear();
      for (const p of list) partners.set(p.id, p);
      byId('partner-options').replaceChildren(...list.map((p) => el('option', { value: p.id, label: `${p.name} (${p.environment}${p.active ? '' : ', inactive'})` })));
    },
    get: (id) => partners.get(id),
    all: () => [...partners.values()],
    cell(id) {
      if (!id) return el('td', {}, el('span', { class: 'sub', text: '—' }));
      const p = partners.get(id);
      return el('td', { class: 'partner', title: id }, p ? el('span', { text: p.name }) : null, p ? ' ' : null, el('span', { class: 'id sub', text: shortId(id) }));
    },
  };
}

const NOTICE_MS = 8000;

/** The green notice under the header: says what an action did, then goes away by itself. */
export function createNotice(): { notify(text: string): void; hide(): void } {
  const box = byId('notice');
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hide = () => box.classList.remove('show');
  byId('notice-close').addEventListener('click', hide);
  return {
    hide,
    notify(text) {
      byId('notice-text').textContent = text;
      box.classList.add('show');
      clearTimeout(timer);
      timer = setTimeout(hide, NOTICE_MS);
    },
  };
}
