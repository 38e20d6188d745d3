import QRCode from 'qrcode';
import { buildQrMatrix } from './src/domain/qr-png.ts';
const t = '00020101021227430012A00000084300000125mn.qpay.gov.00000000012345520493115303496540512000580 2MN5925MINISTRY OF FINANCE MONGO6011ULAANBAATAR62380115INV-2025-00012340515PAY1234567890AB6434 0002MN0128Сангийн яам Монгол улс6304ABCD'.replace(/ /g,'');
function b(name: string, f: () => unknown) { for (let i = 0; i < 500; i++) f(); const n = 3000; const s = process.hrtime.bigint(); for (let i = 0; i < n; i++) f(); console.log(name, (Number(process.hrtime.bigint() - s) / n / 1000).toFixed(1), 'us'); }
b('create mask0', () => QRCode.create(t, { errorCorrectionLevel: 'M', maskPattern: 0 }));
b('build', () => buildQrMatrix(t));
b('create mask0', () => QRCode.create(t, { errorCorrectionLevel: 'M', maskPattern: 0 }));
