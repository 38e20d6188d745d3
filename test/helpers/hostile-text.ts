import fc from 'fast-check';

const char = (from: number, to: number) => fc.integer({ min: from, max: to }).map((c) => String.fromCharCode(c));
const CYRILLIC = [...'АБВГДЕЁЖЗИЙКЛМНОӨПРСТУҮФХЦЧШЩЪЫЬЭЮЯабвгдеёжзийклмноөпрстуүфхцчшщъыьэюя'];

/** Text as a ministry might send it: plain, Cyrillic, symbols only, control characters, broken UTF-16, very long. */
export const hostileText = fc.oneof(
  fc.string({ unit: char(0x20, 0x7e), maxLength: 140 }),
  fc.string({ unit: fc.oneof(fc.constantFrom(...CYRILLIC), char(0x30, 0x39), fc.constantFrom('-', ' ')), maxLength: 60 }),
  fc.string({ unit: fc.constantFrom('✓', '★', '—', '…', '€', '😀', '\u200b', '\u202e', '\u00a0'), maxLength: 10 }),
  fc.string({ unit: fc.oneof(char(0x00, 0x1f), char(0x7f, 0x9f), char(0x41, 0x5a)), maxLength: 30 }),
  fc.string({ unit: fc.oneof(char(0xd800, 0xdfff), fc.constantFrom(...CYRILLIC)), maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 130 }),
  fc.constant(''),
);
