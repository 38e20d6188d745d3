import QRCode from 'qrcode';
import { buildQrMatrix, encodeQrPng } from '/work/main/src/domain/qr-png.ts';
const texts = ['hello', 'x'.repeat(300), '00020101021227430012A00000084300000125mn.qpay.gov.00000000012345520493115303496540512000580 2MN5925MINISTRY OF FINANCE MONGO6011ULAANBAATAR62380115INV-2025-00012340515PAY1234567890AB6434 0002MN0128Сангийн яам Монгол улс6304ABCD'.replace(/ /g,'')];
for (let n = 0; n < 300; n++) texts.push(Math.random().toString(36).repeat(1 + (n % 12)));
let bad = 0;
for (const t of texts) {
  const a = QRCode.create(t, { errorCorrectionLevel: 'M' });
  const b = buildQrMatrix(t);
  if (a.maskPattern !== b.maskPattern || !Buffer.from(a.modules.data).equals(Buffer.from(b.modules))) { bad++; }
}
console.log('mismatch', bad, 'of', texts.length);
const t = texts[2]!;
for (const [name, f] of [['matrix', () => buildQrMatrix(t)], ['png', () => encodeQrPng(t)]] as const) {
  for (let i = 0; i < 300; i++) f();
  const n = 2000; const s = process.hrtime.bigint();
  for (let i = 0; i < n; i++) f();
  console.log(name, Number(process.hrtime.bigint() - s) / n / 1000, 'us');
}
console.log(encodeQrPng(t).length);
