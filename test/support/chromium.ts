/** Headless Chromium (Debian's package, installed by .ci/run) for the console's browser tests. */
import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

export const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));

export function launchChromium(): Promise<Browser> {
  if (!CHROMIUM) throw new Error('Chromium is not installed (Debian: apt-get install -y chromium); .ci/run installs it');
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
