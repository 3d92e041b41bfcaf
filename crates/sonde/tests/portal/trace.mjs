// Opens a trace's result page in headless Chromium and prints what it
// shows as JSON, for crates/sonde/tests/portal/http_api.rs to check
// against the API: each hop row (TTL, address, cells), the path MTU,
// and the route changes listed toward its target. A screenshot goes to
// SHOTS/trace.png.
//
//   node trace.mjs BASE_URL SHOTS_DIR RESULT_ID

import { open, visit } from './browser.mjs';

const [base, shots, id] = process.argv.slice(2);
const out = {};
const { browser, page, problems } = await open();
try {
  out.page = await visit(page, base, `#/result/${id}`);
  out.hops = await page.$$eval('table.trace-hops tr.hop', (rs) => rs.map((r) => ({
    ttl: Number(r.dataset.ttl),
    cells: [...r.cells].map((c) => c.textContent.trim()),
  })));
  out.changes = await page.$$eval('li.route-change', (ls) => ls.map((l) => ({
    hop: Number(l.dataset.hop),
    result: l.dataset.result,
    text: l.textContent.replace(/\s+/g, ' ').trim(),
  })));
  out.empty = await page.$$eval('section.route-changes p.empty', (ps) => ps.map((p) => p.textContent));
  await page.screenshot({ path: `${shots}/trace.png`, fullPage: true });
} finally {
  out.problems = problems;
  await browser.close();
  console.log(JSON.stringify(out));
}
