import type { QrSchemeConfig } from '../../src/domain/emvco-qr.js';

/** The scheme identifiers the QR unit tests build with, as config/qr-schemes.json shapes them. */
export function testSchemes(): QrSchemeConfig {
  return {
    merchantCity: 'ULAANBAATAR',
    mcc: '9311',
    qrpay: { aid: 'A000000999000001', merchantAccountPrefix: 'MN-' },
    govstd: { guid: 'mn.gov.pay', merchantAccountPrefix: '' },
    fallbackPayees: {
      mof: { merchantId: 'GOV-MOF-TREASURY', name: 'Ministry of Finance' },
      etax: { merchantId: 'GOV-ETAX-TREASURY', name: 'Mongolian Tax Authority' },
      police: { merchantId: 'GOV-POLICE-TREASURY', name: 'National Police Agency' },
    },
  };
}
