// Loads each page of the portal in headless Chromium and prints what it
// shows as JSON, for crates/sonde/tests/portal/portal_browser.rs to check
// against the API: overview rows and badge colours, the path page's
// points, the heat map's cells, the mesh's halves and colours (and where
// a click leads), load, campaigns, incidents. Screenshots go to SHOTS.
//
//   node pages.mjs BASE_URL SHOTS_DIR CAMPAIGN INTERFACE READINGS_QUERY

import { open, panels, settled, visit } from './browser.mjs';

const [base, shots, campaign, iface, readings, token] = process.argv.slice(2);
const out = {};
const { browser, page, problems } = await open();
const shot = (name) => page.screenshot({ path: `${shots}/${name}.png`, fullPage: true });

try {
  out.overview = await visit(page, base, '#/');
  out.overview.rows = await page.$$eval('tr.path', (rows) => rows.map((r) => {
    const b = r.querySelector('.badge');
    return { key: r.dataset.key, status: b.dataset.status, colour: getComputedStyle(b).backgroundColor, text: b.textContent };
  }));
  out.overview.alerts = await page.$$eval('li.alert-raised', (els) => els.map((e) => e.dataset.rule));
  await shot('overview');

  // Each path's page from its overview link, over the last day.
  out.paths = [];
  const links = await page.$$eval('tr.path td:nth-child(2) a', (as) => as.map((a) => a.getAttribute('href')));
  for (const [i, href] of links.entries()) {
    const state = await visit(page, base, `${href}&range=1d`);
    out.paths.push({ href, ...state, panels: await panels(page) });
    if (i === 0) {
      await shot('path');
      // The metric choices, as the agent's registry names them.
      out.metricOptions = await page.$$eval('select[name=metric] option', (os) => os.map((o) => o.textContent));
    }
  }
  // Zoom: a drag across the last path's chart narrows its x range.
  if (await page.$('figure.panel .u-over')) {
    const xRange = () => page.$eval('figure.panel', (f) => JSON.parse(f.dataset.x || 'null'));
    const over = await page.$eval('figure.panel .u-over', (o) => o.getBoundingClientRect().toJSON());
    const axisBefore = await xRange();
    await page.mouse.move(over.x + over.width * 0.3, over.y + over.height / 2);
    await page.mouse.down();
    await page.mouse.move(over.x + over.width * 0.7, over.y + over.height / 2, { steps: 5 });
    await page.mouse.up();
    out.zoom = { before: axisBefore, after: await xRange(), hash: await page.evaluate(() => location.hash) };
    // Hover: the legend shows the values under the pointer.
    await page.mouse.move(over.x + over.width * 0.5, over.y + over.height / 2);
    out.hover = await page.$$eval('figure.panel .u-legend .u-value', (vs) => vs.map((v) => v.textContent));
  }

  out.heatmap = await visit(page, base, '#/heatmap?test=tcp&metric=throughput_bps&range=30d');
  out.heatmap.figures = await page.$$eval('figure.heatmap', (fs) => fs.map((f) => ({ cells: Number(f.dataset.cells), days: Number(f.dataset.days) })));
  await shot('heatmap');
  // A measured cell opens the results of its hour; a result opens its
  // own page.
  const cell = await page.$eval('figure.heatmap', (f) => {
    const g = JSON.parse(f.dataset.geometry);
    const [x, y] = JSON.parse(f.dataset.first);
    const r = f.querySelector('canvas').getBoundingClientRect();
    return { x: r.left + g.left + (x + 0.5) * g.cw, y: r.top + (y + 0.5) * g.ch };
  });
  await page.mouse.click(cell.x, cell.y);
  await page.waitForFunction(() => document.body.dataset.page === 'results');
  out.heatmap.click = { ...(await settled(page)), hash: await page.evaluate(() => location.hash) };
  out.heatmap.click.rows = await page.$$eval('tr.result', (rs) => rs.map((r) => r.dataset.id));
  await shot('results');
  await page.click('tr.result a');
  await page.waitForFunction(() => document.body.dataset.page === 'result');
  out.result = { ...(await settled(page)), hash: await page.evaluate(() => location.hash), panels: await panels(page) };
  out.result.labels = await page.$$eval('li.label', (ls) => ls.map((l) => l.textContent.trim()));
  out.result.directions = await page.$$eval('tr.figures', (rs) => rs.map((r) => r.dataset.direction));
  out.result.kept = await page.$eval('p.kept', (p) => p.textContent);
  await shot('result');
  // A label selects a path's history too.
  const step = out.result.labels.find((l) => l.startsWith('step='));
  out.labelled = { label: step, ...(await visit(page, base, `#/path?label=${encodeURIComponent(step)}&metric=throughput_bps&range=1d`)) };
  out.labelled.panels = await panels(page);

  out.mesh = await visit(page, base, '#/mesh?metric=rtt_ms');
  out.mesh.halves = await page.$$eval('.half', (hs) => hs.map((h) => ({
    source: h.parentElement.dataset.source,
    target: h.parentElement.dataset.target,
    half: h.dataset.half,
    status: h.dataset.status,
    colour: getComputedStyle(h).backgroundColor,
  })));
  await shot('mesh');
  if (out.mesh.halves.length) {
    await page.click('a.cell');
    await page.waitForFunction(() => document.body.dataset.page === 'path');
    out.mesh.click = { ...(await settled(page)), hash: await page.evaluate(() => location.hash), panels: await panels(page) };
  }

  out.load = await visit(page, base, `#/load?interface=${encodeURIComponent(iface)}&range=1h`);
  out.load.panels = await panels(page);
  await shot('load');

  out.readings = await visit(page, base, `#/readings?${readings}`);
  out.readings.panels = await panels(page);
  out.readings.target = await page.$eval('select[name=target]', (s) => s.value);
  await shot('readings');

  out.campaigns = await visit(page, base, '#/campaigns');
  out.campaigns.names = await page.$$eval('tr[data-campaign]', (rs) => rs.map((r) => r.dataset.campaign));
  out.campaign = await visit(page, base, `#/campaign/${encodeURIComponent(campaign)}`);
  out.campaign.runs = await page.$$eval('table.runs.all tr.run', (rs) => rs.map((r) => r.dataset.run));
  out.campaign.plan = await page.$eval('pre.plan', (p) => p.textContent);
  await page.click('table.runs.all button.events');
  await page.waitForSelector('tr.run-events li');
  out.campaign.events = await page.$$eval('tr.run-events li', (ls) => ls.length);
  await shot('campaign');

  // Incidents are personal data: without a token the page says to give
  // one; with it (as a user enters it under "token"), they show.
  const before = problems.length;
  out.incidentsAnonymous = await visit(page, base, '#/incidents');
  // The browser logs the 401 itself: expected here, and kept apart.
  out.incidentsAnonymous.console = problems.splice(before);
  await page.evaluate((t) => localStorage.setItem('sonde.token', t), token);
  await page.reload();
  out.incidents = await settled(page);
  out.incidents.rows = await page.$$eval('tr[data-incident]', (rs) => rs.map((r) => ({
    id: Number(r.dataset.incident),
    cells: [...r.cells].map((c) => c.textContent.trim()),
  })));
  await shot('incidents');
  await page.click('tr[data-incident] a');
  await page.waitForFunction(() => document.body.dataset.page === 'incident');
  out.incident = { ...(await settled(page)), hash: await page.evaluate(() => location.hash) };
  out.incident.fields = await page.$eval('dl.incident', (d) => ({ status: d.dataset.status, state: d.dataset.state }));
  out.incident.addresses = await page.$$eval('table.addresses tbody tr', (rs) => rs.map((r) => [...r.cells].map((c) => c.textContent.trim())));
  out.incident.history = await page.$$eval('table.history tbody tr', (rs) => rs.length);
  await shot('incident');
} finally {
  out.problems = problems;
  await browser.close();
  console.log(JSON.stringify(out));
}
