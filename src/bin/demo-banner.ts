import type { Config } from '../config/config.js';
import type { PartnerService } from '../services/partner.service.js';
import { API_PREFIX } from '../app.js';

const DEMO = { register: '5317878', vehicle: '1234УБА', taxRef: 'TR-2025-000123' };
/** The partner created on the first start; found again by this name on a restart. */
export const DEMO_PARTNER_NAME = 'Demo Bank';
const RULE = '='.repeat(68);

/** What the banner needs from the partner service. */
export type BannerPartners = Pick<PartnerService, 'count' | 'list' | 'create'>;

/** A browser cannot open a wildcard address: show loopback instead; IPv6 literals need brackets. */
function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '::' || host === '') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

/**
 * The banner's lines. On an empty database it creates the demo partner (its key is shown this
 * once), and tells `progress` first: a first start says what it does as it goes.
 */
export async function demoBannerLines(config: Config, partners: BannerPartners, usingSimulator: boolean, progress: (line: string) => void = () => undefined): Promise<string[]> {
  const origin = `http://${urlHost(config.host)}:${config.port}`;
  const base = `${origin}${API_PREFIX}`;
  const adminToken = config.adminToken === 'local-admin-token' ? 'local-admin-token' : '<ADMIN_TOKEN>';
  const head = [
    '',
    '================ Government payment channel (local) ================',
    `API:       ${base}`,
    `Sandbox:   ${base}/sandbox   (look up, pay and approve invoices in the browser)`,
    `API docs:  ${base}/docs   (OpenAPI: ${base}/openapi.json)`,
    `Console:   http://${urlHost(config.adminHost)}:${config.adminPort}/   (operator console; Bearer ${adminToken})`,
    usingSimulator ? `Simulator: http://127.0.0.1:${config.simulator.port} (mof, etax, police)` : 'Ministries: configured upstream URLs',
  ];

  if ((await partners.count()) > 0) {
    const demo = (await partners.list()).find((p) => p.name === DEMO_PARTNER_NAME);
    return [
      ...head,
      '',
      'API key:   partners exist already; a key is shown only when it is made (only its hash is stored).',
      '  Get one: npm run cli -- partner create --name "My Bank"',
      demo
        ? `  or rotate the ${DEMO_PARTNER_NAME} key: npm run cli -- partner rotate-key ${demo.id}`
        : '  or rotate a partner\'s key: npm run cli -- partner rotate-key <partnerId>   (ids: npm run cli -- partner list)',
      '  then type the key into the sandbox page, or send it as the X-API-Key header.',
      RULE,
      '',
    ];
  }

  progress(`seeding the demo data: partner ${DEMO_PARTNER_NAME} and its API key${usingSimulator ? ' (the built-in simulator holds the demo invoices)' : ''}`);
  const demo = await partners.create({ name: DEMO_PARTNER_NAME, qrStandard: 'qrpay' });
  return [
    ...head,
    '',
    `Demo partner API key: ${demo.apiKey}`,
    '  (shown this once: save it; on a later start, rotate it with',
    `   npm run cli -- partner rotate-key ${demo.id})`,
    '',
    'Try:',
    `  curl -H "X-API-Key: ${demo.apiKey}" "${base}/invoices?ttd=${DEMO.register}"`,
    `  curl -G -H "X-API-Key: ${demo.apiKey}" --data-urlencode "vehicle=${DEMO.vehicle}" "${base}/invoices"`,
    `  curl -H "X-API-Key: ${demo.apiKey}" "${base}/invoices?taxRef=${DEMO.taxRef}"`,
    RULE,
    '',
  ];
}

/** Printed on every local start: where everything is, and the demo key (first start) or how to get a key. */
export async function printDemoBanner(
  config: Config,
  partners: BannerPartners,
  usingSimulator: boolean,
  print: (text: string) => void = console.log,
  progress?: (line: string) => void,
): Promise<void> {
  print((await demoBannerLines(config, partners, usingSimulator, progress)).join('\n'));
}
