import { buildEmvcoPayload, parseEmvcoTlv, verifyEmvcoCrc, transliterateMongolian } from './src/domain/emvco-qr.ts';
import schemes from './config/qr-schemes.json' with { type: 'json' };
import { createQrService, referenceLabelFor } from './src/services/qr.service.ts';
import { loadQrConfig } from './src/services/qr-config.loader.ts';
const base = { scheme: schemes, merchantAccount: 'GOV-MOF-01', amount: '12000.50', payeeName: 'Сангийн яам', city: 'ULAANBAATAR', billNumber: 'MOF-2025-000123', referenceLabel: 'PAY0001' };
for (const standard of ['qrpay', 'govstd'] as const) {
  const p = buildEmvcoPayload({ ...base, standard });
  console.log(p, verifyEmvcoCrc(p)); console.log(parseEmvcoTlv(p));
}
console.log(buildEmvcoPayload({ ...base, standard: 'govstd', payeeNameLocal: 'Сангийн яам', amount: '12000' }));
console.log(transliterateMongolian('ХААН БАНК Өлзий Үйлдвэр ЧИНГИС хаан Шинэ'), referenceLabelFor('ffffffff-ffff-ffff-ffff-ffffffffffff'), referenceLabelFor('0b8f4a3e-5c1d-4e2f-9a7b-3c6d5e4f1a2b'));
const cfg = await loadQrConfig();
const svc = createQrService({ ...cfg, shortUrlBase: 'https://pay.gov.mn/p' });
const r = svc.build({ standard: 'qrpay', paymentId: '0b8f4a3e-5c1d-4e2f-9a7b-3c6d5e4f1a2b', amount: '15000', payeeId: 'GOV-MOF-01', payeeName: 'Сангийн яам', billNumber: 'MOF-2025-000123' });
console.log(r.qrText, r.shortUrl, r.urls[0], r.qrImage.length);
