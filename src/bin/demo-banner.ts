import type { Config } from '../config.js';
import type { PartnerService } from '../services/partner.service.js';
import { API_PREFIX } from '../app.js';

const DEMO = { register: '5317878', vehicle: '1234УБА', taxRef: 'TR-2025-000123' };

/** On an empty local database: create a demo partner and show how to call the API with it. */
export async function printDemoBanner(config: Config, partners: PartnerService, usingSimulator: boolean): Promise<void> {
  const base = `http://${config.host}:${config.port}${API_PREFIX}`;
  if ((await partners.count()) > 0) {
    console.log(`\nAPI ready at ${base} (existing database; create a key with: npm run cli -- partner create --name "My Bank")\n`);
    return;
  }
  const demo = await partners.create({ name: 'Demo Bank', qrStandard: 'qrpay' });
  const lines = [
    '',
    '================ Government payment channel (local) ================',
    `API:       ${base}`,
    `Admin:     http://${config.adminHost}:${config.adminPort} (Bearer ${config.adminToken === 'local-admin-token' ? 'local-admin-token' : '<ADMIN_TOKEN>'})`,
    usingSimulator ? `Simulator: http://127.0.0.1:${config.simulator.port} (mof, etax, police)` : 'Ministries: configured upstream URLs',
    `Demo partner API key: ${demo.apiKey}`,
    '',
    'Try:',
    `  curl -H "X-API-Key: ${demo.apiKey}" "${base}/invoices?ttd=${DEMO.register}"`,
    `  curl -G -H "X-API-Key: ${demo.apiKey}" --data-urlencode "vehicle=${DEMO.vehicle}" "${base}/invoices"`,
    `  curl -H "X-API-Key: ${demo.apiKey}" "${base}/invoices?taxRef=${DEMO.taxRef}"`,
    '====================================================================',
    '',
  ];
  console.log(lines.join('\n'));
}
