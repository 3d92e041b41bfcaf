// bench/portal's page loads: each page of the portal opened RUNS times
// in headless Chromium (/usr/bin/chromium through playwright-core, the
// portal's devDependency), timed from navigation start to the page
// saying it is drawn (body[data-state=ready]: the API answered and
// every chart is on screen). Prints a line per page: median and worst,
// the median of the slowest API answer each load waited for, and what
// it drew. The agent's other figures (heat-map API time, idle
// RSS) are measured beside this by bench/portal/run.
//
//   node page_load.mjs BASE_URL RUNS TARGET

import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.resolve(here, '../../crates/sonde-web/portal/package.json'));
const { chromium } = require('playwright-core');

const [base, runsArg, target] = process.argv.slice(2);
const runs = Number(runsArg || 5);
const now = Math.floor(Date.now() / 1000);
const year = `range=custom&since=${now - 365 * 86400}&until=${now}`;
const t = encodeURIComponent(target);
const PAGES = [
  ['overview', '#/'],
  ['path, TCP, 1 week', `#/path?test=tcp&target=${t}&metric=throughput_bps&range=1w`],
  ['path, TCP, 1 year', `#/path?test=tcp&target=${t}&metric=throughput_bps&${year}`],
  ['path, RTT, 1 year', `#/path?test=ping&target=${t}&metric=rtt_ms&${year}`],
  ['heat map, TCP, 1 year', `#/heatmap?test=tcp&target=${t}&metric=throughput_bps&range=1y`],
  ['mesh', '#/mesh?metric=rtt_ms'],
  ['load beside RTT, 1 day', `#/load?target=${t}&range=1d`],
  ['campaigns', '#/campaigns'],
];

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
const errors = [];
page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
page.on('pageerror', (e) => errors.push(e.message));

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`page load in Chromium, navigation → drawn, ${runs} runs each (first load of each page uncached)`);
console.log(`${'page'.padEnd(26)} ${'median ms'.padStart(10)} ${'worst ms'.padStart(9)} ${'API ms'.padStart(7)}  drawn`);
for (const [name, hash] of PAGES) {
  const times = [];
  const apis = [];
  let drawn = '';
  for (let i = 0; i < runs; i += 1) {
    // A fresh document each time: about:blank between loads.
    await page.goto('about:blank');
    await page.goto(`${base}/${hash}`);
    await page.waitForFunction(() => document.body.dataset.state !== 'loading', null, { timeout: 120000 });
    const r = await page.evaluate(() => ({
      state: document.body.dataset.state,
      ms: Number(document.body.dataset.readyMs),
      // The slowest API answer the page waited for.
      api: Math.max(0, ...performance.getEntriesByType('resource')
        .filter((e) => e.name.includes('/api/v1/'))
        .map((e) => e.duration)),
      points: [...document.querySelectorAll('figure.panel')]
        .flatMap((f) => JSON.parse(f.dataset.points || '[]'))
        .reduce((n, s) => n + (s.points || 0), 0),
      cells: [...document.querySelectorAll('figure.heatmap')].reduce((n, f) => n + Number(f.dataset.cells), 0),
      rows: document.querySelectorAll('tr').length,
    }));
    if (r.state !== 'ready') {
      drawn = `failed: ${await page.textContent('#notice')}`;
      break;
    }
    times.push(r.ms);
    apis.push(r.api);
    drawn = r.cells ? `${r.cells} heat-map cells` : r.points ? `${r.points} points` : `${r.rows} table rows`;
  }
  const fmt = (v) => (v === undefined ? '–' : v.toFixed(0));
  console.log(`${name.padEnd(26)} ${fmt(median(times)).padStart(10)} ${fmt(times.length ? Math.max(...times) : undefined).padStart(9)} ${fmt(median(apis)).padStart(7)}  ${drawn}`);
}
if (errors.length) console.log(`console errors: ${errors.join(' | ')}`);
await browser.close();
