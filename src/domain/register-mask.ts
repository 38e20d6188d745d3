/**
 * A payer's register (a citizen's or company's number) as a receipt may show it: enough for its
 * owner to recognise, not enough for whoever finds the receipt to learn it. The first two and last
 * two characters stay (the letters of a citizen's register and a check); the rest become `*`.
 */
export function maskRegister(register: string): string {
  const chars = [...register.trim()];
  if (chars.length <= 4) return '*'.repeat(Math.max(chars.length - 1, 0)) + (chars.at(-1) ?? '');
  return chars.slice(0, 2).join('') + '*'.repeat(chars.length - 4) + chars.slice(-2).join('');
}
