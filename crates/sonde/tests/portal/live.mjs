// The live page during a real test: started from the page's own form
// (first without a token: the page must say so), its intervals counted
// while it runs and when it has finished; then a ping, its replies; then a
// long ping stopped with its card's button. Prints JSON for
// crates/sonde/tests/portal/portal_browser.rs; a screenshot while it runs.
//
//   node live.mjs BASE_URL SHOTS_DIR TOKEN HOST PORT SECONDS

import { open, settled } from './browser.mjs';

const [base, shots, token, host, port, seconds] = process.argv.slice(2);
const out = {};
const { browser, page, problems } = await open();

async function start(test = 'tcp', count = '4') {
  await page.selectOption('form.start-test select[name=test]', test);
  await page.fill('form.start-test input[name=host]', host);
  await page.fill('form.start-test input[name=port]', port);
  await page.fill('form.start-test input[name=time_s]', seconds);
  await page.fill('form.start-test input[name=count]', count);
  await page.click('form.start-test button[type=submit]');
  await page.waitForFunction(() => !document.querySelector('.start-answer').textContent.startsWith('starting'));
  return page.$eval('.start-answer', (a) => ({ text: a.textContent, error: a.classList.contains('error'), run: a.dataset.run || null }));
}

try {
  // Without a token: refused, and the page says why.
  await page.goto(`${base}/#/live`);
  out.page = await settled(page);
  out.without_token = await start();
  out.problems_without_token = problems.splice(0);

  // With the token (kept in localStorage, as the token form does).
  await page.evaluate((t) => localStorage.setItem('sonde.token', t), token);
  await page.reload();
  await settled(page);
  await page.waitForFunction(() => document.querySelector('.stream-state').textContent.startsWith('receiving'));
  out.started = await start();
  const card = `.run-card[data-run="${out.started.run}"]`;
  // Intervals while it runs: at least two, before it has finished.
  await page.waitForFunction((sel) => {
    const c = document.querySelector(sel);
    return c && Number(c.querySelector('figure').dataset.points || 0) >= 2;
  }, card, { timeout: 60000 });
  out.running = await page.$eval(card, (c) => ({ state: c.dataset.state, points: Number(c.querySelector('figure').dataset.points) }));
  await page.screenshot({ path: `${shots}/live.png`, fullPage: true });
  await page.waitForFunction((sel) => document.querySelector(sel).dataset.state !== 'running', card, { timeout: 60000 });
  out.finished = await page.$eval(card, (c) => ({
    state: c.dataset.state,
    points: Number(c.querySelector('figure').dataset.points),
    result: c.querySelector('.run-state code')?.textContent || null,
    text: c.querySelector('.run-state').textContent,
  }));

  // A ping: each reply drawn as it comes.
  out.ping = await start('ping');
  const pingCard = `.run-card[data-run="${out.ping.run}"]`;
  await page.waitForFunction((sel) => document.querySelector(sel)?.dataset.state === 'finished', pingCard, { timeout: 60000 });
  out.ping.finished = await page.$eval(pingCard, (c) => ({
    points: Number(c.querySelector('figure').dataset.points),
    result: c.querySelector('.run-state code')?.textContent || null,
  }));

  // A long ping, stopped from its card.
  out.stopped = await start('ping', '200');
  const longCard = `.run-card[data-run="${out.stopped.run}"]`;
  await page.waitForFunction((sel) => Number(document.querySelector(sel)?.querySelector('figure').dataset.points || 0) >= 2, longCard, { timeout: 60000 });
  await page.click(`${longCard} button.stop`);
  await page.waitForFunction((sel) => document.querySelector(sel).dataset.state !== 'running', longCard, { timeout: 60000 });
  out.stopped.answer = await page.$eval(`${longCard} .stop-answer`, (a) => a.textContent);
  out.stopped.finished = await page.$eval(longCard, (c) => ({
    state: c.dataset.state,
    result: c.querySelector('.run-state code')?.textContent || null,
  }));
} finally {
  out.problems = problems;
  await browser.close();
  console.log(JSON.stringify(out));
}
