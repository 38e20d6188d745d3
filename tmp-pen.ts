import QRCode from 'qrcode';
const t = '00020101021227430012A00000084300000125mn.qpay.gov.00000000012345520493115303496540512000580 2MN5925MINISTRY OF FINANCE MONGO6011ULAANBAATAR62380115INV-2025-00012340515PAY1234567890AB6434 0002MN0128Сангийн яам Монгол улс6304ABCD'.replace(/ /g,'');
const sym = QRCode.create(t, { errorCorrectionLevel: 'M', maskPattern: 0 });
const m = sym.modules.data; const size = sym.modules.size;
function b(name: string, f: () => unknown) { for (let i = 0; i < 500; i++) f(); const n = 5000; const s = process.hrtime.bigint(); for (let i = 0; i < n; i++) f(); console.log(name, (Number(process.hrtime.bigint() - s) / n / 1000).toFixed(1), 'us'); }
b('runFinder', () => runAndFinderPenalty(m, size));
b('block', () => blockPenalty(m, size));
b('balance', () => balancePenalty(m));
function penalty(m: Uint8Array, size: number): number {
  return runAndFinderPenalty(m, size) + blockPenalty(m, size) + balancePenalty(m);
}

function runAndFinderPenalty(m: Uint8Array, size: number): number {
  let points = 0;
  for (let line = 0; line < size; line++) {
    let rowRun = 0, colRun = 0, rowLast = -1, colLast = -1, rowBits = 0, colBits = 0;
    for (let k = 0; k < size; k++) {
      const r = m[line * size + k] ?? 0;
      const c = m[k * size + line] ?? 0;
      if (r === rowLast) rowRun++;
      else {
        if (rowRun >= 5) points += rowRun - 2;
        rowLast = r;
        rowRun = 1;
      }
      if (c === colLast) colRun++;
      else {
        if (colRun >= 5) points += colRun - 2;
        colLast = c;
        colRun = 1;
      }
      rowBits = ((rowBits << 1) & 0x7ff) | r;
      colBits = ((colBits << 1) & 0x7ff) | c;
      if (k >= 10) {
        if (rowBits === 0x5d0 || rowBits === 0x05d) points += 40;
        if (colBits === 0x5d0 || colBits === 0x05d) points += 40;
      }
    }
    if (rowRun >= 5) points += rowRun - 2;
    if (colRun >= 5) points += colRun - 2;
  }
  return points;
}

function blockPenalty(m: Uint8Array, size: number): number {
  let blocks = 0;
  for (let row = 0; row < size - 1; row++) {
    const top = row * size;
    const bottom = top + size;
    for (let col = 0; col < size - 1; col++) {
      const sum = (m[top + col] ?? 0) + (m[top + col + 1] ?? 0) + (m[bottom + col] ?? 0) + (m[bottom + col + 1] ?? 0);
      if (sum === 0 || sum === 4) blocks++;
    }
  }
  return blocks * 3;
}

function balancePenalty(m: Uint8Array): number {
  let dark = 0;
  for (let i = 0; i < m.length; i++) dark += m[i] ?? 0;
  return Math.abs(Math.ceil((dark * 100) / m.length / 5) - 10) * 10;
}

// ---- PNG --------------------------------------------------------------------------------
