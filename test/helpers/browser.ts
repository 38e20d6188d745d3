import { chromium, type Browser } from 'playwright-core';
import type { FastifyInstance } from 'fastify';

/** Debian's chromium package; the browser tests skip themselves where it is absent. */
export const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
/** Where the browser tests leave their screenshots (gitignored). */
export const ARTIFACTS = 'artifacts';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
}

/** Listens on a free loopback port and answers the base URL. */
export async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  if (typeof address !== 'object' || !address) throw new Error('no listening address');
  return `http://127.0.0.1:${address.port}`;
}
