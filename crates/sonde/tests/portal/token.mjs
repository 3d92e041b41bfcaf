// A private agent (read_public = false): the overview without a token,
// with a wrong one, with the right one (set as the token form keeps it,
// in localStorage). Prints each page's state and notice, whether any
// request carried the token in its URL, and the console's complaints.
//
//   node token.mjs BASE_URL TOKEN

import { open, settled } from './browser.mjs';

const [base, token] = process.argv.slice(2);
const out = { url_has_token: false };
const { browser, page, problems } = await open();
page.on('request', (r) => {
  if (r.url().includes(token)) out.url_has_token = true;
});
const state = async () => ({
  ...(await settled(page)),
  error: await page.evaluate(() => document.body.dataset.error || null),
});

try {
  await page.goto(`${base}/#/`);
  out.none = await state();
  await page.click('#token-button');
  await page.fill('#token-input', 'not-the-token-at-all-0000');
  await page.click('#token-form button[type=submit]');
  await page.waitForFunction(() => document.body.dataset.state !== 'loading');
  out.wrong = await state();
  await page.click('#token-button');
  await page.fill('#token-input', token);
  await page.click('#token-form button[type=submit]');
  out.right = await state();
} finally {
  out.problems = problems;
  await browser.close();
  console.log(JSON.stringify(out));
}
