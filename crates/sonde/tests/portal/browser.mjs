// Shared by the portal's browser drivers: headless Chromium from the
// system (/usr/bin/chromium or $CHROMIUM) driven by playwright-core, the
// portal's devDependency (no browser is downloaded), every console
// message and page error kept.

import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const portal = process.env.SONDE_PORTAL_DIR
  || path.resolve(here, '../../../sonde-web/portal');
const require = createRequire(path.join(portal, 'package.json'));
const { chromium } = require('playwright-core');

/** A browser and a page that records its console; `problems` holds
 * every console error or warning and uncaught page error. */
export async function open({ width = 1280, height = 900 } = {}) {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  const context = await browser.newContext({ viewport: { width, height } });
  const page = await context.newPage();
  const problems = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()} (${page.url()})`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message} (${page.url()})`));
  return { browser, page, problems };
}

/** Goes to `#/hash` and waits until the page says it is drawn (or
 * failed); returns the state. */
export async function visit(page, base, hash, timeout = 30000) {
  await page.goto(`${base}/${hash}`);
  return settled(page, timeout);
}

/** Waits for body[data-state] to leave 'loading'. */
export async function settled(page, timeout = 30000) {
  await page.waitForFunction(() => document.body.dataset.state !== 'loading', null, { timeout });
  return page.evaluate(() => ({
    state: document.body.dataset.state,
    page: document.body.dataset.page,
    notice: document.getElementById('notice').hidden ? '' : document.getElementById('notice').textContent,
  }));
}

/** Each chart panel's series and their point counts. */
export function panels(page) {
  return page.$$eval('figure.panel', (figs) => figs.map((f) => ({
    title: f.querySelector('.u-title, figcaption')?.textContent || '',
    series: JSON.parse(f.dataset.points || '[]'),
  })));
}
