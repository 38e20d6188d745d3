/**
 * CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no final xor): the checksum
 * EMVCo QR payloads carry in tag 63. Table-driven because it runs on every QR we build.
 */
const TABLE = buildTable();

function buildTable(): Uint16Array {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit++) {
      crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
    }
    table[byte] = crc & 0xffff;
  }
  return table;
}

export function crc16CcittFalseBytes(bytes: Uint8Array): number {
  let crc = 0xffff;
  for (const byte of bytes) {
    crc = ((crc << 8) & 0xffff) ^ (TABLE[((crc >>> 8) ^ byte) & 0xff] ?? 0);
  }
  return crc;
}

/** CRC of the UTF-8 bytes of `text`, as 4 uppercase hex characters. */
export function crc16CcittFalse(text: string): string {
  const crc = crc16CcittFalseBytes(Buffer.from(text, 'utf8'));
  return crc.toString(16).toUpperCase().padStart(4, '0');
}
