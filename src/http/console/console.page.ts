/*
 * The operator console's script (served bundled by routes/console.routes.ts): sign-in with an
 * admin token kept in this tab only, then one screen per tab, each reading the admin API.
 */
import { byId, createApiClient, createErrorBox, type ApiError } from '../page-ui/page-ui.js';
import { timezoneNote } from '../page-ui/page-format.js';
import { TABS, createNotice, createPartnerNames, isTab, type ConsoleContext, type Navigation, type Partner, type Tab } from './console-context.js';
import { busy } from './console-table.ui.js';
import { createAuditScreen } from './audit.screen.js';
import { createCasesScreen } from './cases.screen.js';
import { createDeliveriesScreen } from './deliveries.screen.js';
import { createPartnersScreen } from './partners.screen.js';
import { createPaymentsScreen } from './payments.screen.js';
import { createReconciliationScreen } from './reconciliation.screen.js';

const TOKEN_KEY = 'gpc.console.token';

/** Session storage may be refused (a privacy mode): the console then forgets the token on reload. */
const tokenStore = {
  get(): string {
    try {
      return sessionStorage.getItem(TOKEN_KEY) ?? '';
    } catch {
      return '';
    }
  },
  set(token: string): void {
    try {
      if (token) sessionStorage.setItem(TOKEN_KEY, token);
      else sessionStorage.removeItem(TOKEN_KEY);
    } catch {
      // Nothing to do: the token lives in memory until the tab closes.
    }
  },
};

const errorHint = (err: ApiError) => (err.status === 401 ? ' — sign in again with a valid admin token' : '');

const tabInUrl = (): Tab => {
  const name = location.hash.slice(1);
  return isTab(name) ? name : 'partners';
};

type Screens = ReturnType<typeof createScreens>;

function createScreens(ctx: ConsoleContext) {
  return {
    partners: createPartnersScreen(ctx),
    payments: createPaymentsScreen(ctx),
    cases: createCasesScreen(ctx),
    reconciliation: createReconciliationScreen(ctx),
    deliveries: createDeliveriesScreen(ctx),
    audit: createAuditScreen(ctx),
  };
}

/** The tab bar: shows one screen, loads what it shows, keeps the screen in the URL. */
function createTabs(screens: Screens, hideNotice: () => void) {
  const loaded = new Set<Tab>();
  let current: Tab | '' = '';
  /** The payments search stays as the operator left it; the other lists change under them, so they reload. */
  const onShow: Record<Tab, () => void> = {
    partners: () => void screens.partners.load(),
    payments: () => void (loaded.has('payments') ? undefined : screens.payments.load()),
    cases: () => void screens.cases.load(),
    reconciliation: () => screens.reconciliation.load(),
    deliveries: () => void screens.deliveries.load(),
    audit: () => void screens.audit.load(),
  };
  function show(name: Tab): void {
    for (const t of TABS) {
      byId(`tab-${t}`).setAttribute('aria-selected', String(t === name));
      byId(`section-${t}`).hidden = t !== name;
    }
    if (current && current !== name) hideNotice();
    current = name;
    if (location.hash !== `#${name}`) history.replaceState(null, '', `#${name}`);
    onShow[name]();
    loaded.add(name);
  }
  for (const t of TABS) byId(`tab-${t}`).addEventListener('click', () => (current !== t || t !== 'payments' ? show(t) : undefined));
  return {
    show,
    current: () => current,
    /** The payments screen is about to be filled by a search of its own, not its first load. */
    skipFirstLoad: (tab: Tab) => loaded.add(tab),
    reset(): void {
      for (const t of TABS) byId(`section-${t}`).hidden = true;
      current = '';
      loaded.clear();
    },
  };
}

function wireNavigation(nav: Navigation, screens: Screens, tabs: ReturnType<typeof createTabs>): void {
  Object.assign(nav, {
    showTab: tabs.show,
    openPayment(id) {
      tabs.show('payments');
      void screens.payments.open(id);
    },
    paymentsOf(partnerId) {
      tabs.skipFirstLoad('payments');
      tabs.show('payments');
      void screens.payments.showPartner(partnerId);
    },
    deliveriesOf(partnerId) {
      screens.deliveries.filterPartner(partnerId);
      tabs.show('deliveries');
    },
  } satisfies Navigation);
}

function start(): void {
  let token = tokenStore.get();
  const errors = createErrorBox(errorHint);
  const notice = createNotice();
  // Filled in by wireNavigation once every screen exists: the screens move to each other through it.
  const nav: Navigation = { showTab: () => undefined, openPayment: () => undefined, paymentsOf: () => undefined, deliveriesOf: () => undefined };
  const api = createApiClient({ base: '', headers: () => ({ authorization: `Bearer ${token}` }), onUnauthorized: () => signOut() });
  const ctx: ConsoleContext = { api, errors, notify: notice.notify, partners: createPartnerNames(), nav };
  const screens = createScreens(ctx);
  const tabs = createTabs(screens, notice.hide);
  wireNavigation(nav, screens, tabs);

  function showApp(signedIn: boolean): void {
    byId('signin-section').hidden = signedIn;
    for (const id of ['tabs', 'session-label', 'sign-out']) byId(id).hidden = !signedIn;
    if (signedIn) return;
    tabs.reset();
    screens.partners.hideKey();
    screens.payments.close();
    screens.cases.close();
  }
  function signOut(): void {
    token = '';
    tokenStore.set('');
    showApp(false);
    byId('token').focus();
  }
  async function signIn(given: string): Promise<void> {
    token = given;
    try {
      // Any admin read proves the token; the partner list is needed for names everywhere anyway.
      ctx.partners.remember(await api.data<Partner[]>('GET', '/admin/partners'));
      tokenStore.set(token);
      byId<HTMLInputElement>('token').value = '';
      errors.clear();
      showApp(true);
      tabs.show(tabInUrl());
    } catch (err) {
      token = '';
      errors.show(err, 'Sign in');
    }
  }

  byId('sign-out').addEventListener('click', () => {
    errors.clear();
    signOut();
  });
  byId('signin-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const given = byId<HTMLInputElement>('token').value.trim();
    if (!given) return errors.show(new Error('enter the admin token'), 'Sign in');
    void busy(byId<HTMLButtonElement>('sign-in'), 'Signing in…', () => signIn(given));
  });
  window.addEventListener('hashchange', () => {
    if (token && location.hash.slice(1) !== tabs.current()) tabs.show(tabInUrl());
  });
  byId('tz-note').textContent = timezoneNote(new Date().getTimezoneOffset());

  showApp(token !== '');
  if (!token) return byId('token').focus();
  const tab = tabInUrl();
  // Partner names for the other screens (the partners screen loads them itself); a 401 signs out.
  if (tab !== 'partners') api.data<Partner[]>('GET', '/admin/partners').then((list) => ctx.partners.remember(list), (err: unknown) => errors.show(err, 'Loading partners'));
  tabs.show(tab);
}

start();
