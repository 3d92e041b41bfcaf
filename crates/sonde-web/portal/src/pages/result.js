// One result's page (#/result/ID): what ran, where it was kept (campaign,
// run, method, labels), each direction's figures (a bidirectional test's
// forward and reverse, never their sum) and its figures per interval
// drawn over the seconds of the test (the chart `sonde results show
// --chart` draws). Reached from the overview, the results lists, the
// heat map's cells and the mesh. A trace shows its hops and the route
// changes toward its target instead (./trace.js).

import { get } from '../api.js';
import { drawChart } from '../charts.js';
import { esc, metricValue } from '../format.js';
import { pathHref } from './links.js';
import { resultsHref } from './results.js';
import { renderTrace } from './trace.js';

const DIRECTIONS = ['forward', 'reverse', 'round_trip', 'total'];

/** Each direction's own figures, as the archive names them. */
function byDirection(summary) {
  const out = [];
  for (const d of ['forward', 'reverse']) if (summary[d]) out.push([d, summary[d]]);
  if (out.length === 0) {
    if (summary.round_trip) out.push(['round_trip', summary.round_trip]);
    else if (summary.total) out.push(['total', summary.total]);
  }
  return out;
}

function figuresRow([direction, f]) {
  const rtt = f.rtt_ms ? f.rtt_ms.p50 : null;
  return `<tr class="figures" data-direction="${esc(direction)}">
    <td>${esc(direction)}</td>
    <td class="num">${metricValue('throughput_bps', f.throughput_bps)}</td>
    <td class="num">${metricValue('loss_pct', f.loss_pct)}</td>
    <td class="num">${metricValue('pdr_pct', f.pdr_pct)}</td>
    <td class="num">${metricValue('jitter_ms', f.jitter_ms)}</td>
    <td class="num">${metricValue('rtt_ms', rtt)}</td>
    <td class="num">${f.retransmits ?? '–'}</td></tr>`;
}

export async function render(app, params, ctx, rest) {
  const id = rest[0] || params.get('id') || '';
  const [r, view] = await Promise.all([
    get(`results/${encodeURIComponent(id)}`, {}, ctx.signal),
    get(`results/${encodeURIComponent(id)}/view`, {}, ctx.signal),
  ]);
  const spec = r.spec || {};
  const test = r.test || spec.test || '';
  const source = (r.env && r.env.client && r.env.client.hostname) || '';
  const labels = Object.entries(view.labels || {});
  const kept = [
    view.campaign && `campaign <a href="#/campaign/${encodeURIComponent(view.campaign)}">${esc(view.campaign)}</a>`,
    view.run_id && `run ${esc(view.run_id)}`,
    view.method_id && `a trial of method ${esc(view.method_id)}`,
  ].filter(Boolean);
  const rows = byDirection(r.summary || {}).sort((a, b) => DIRECTIONS.indexOf(a[0]) - DIRECTIONS.indexOf(b[0]));
  const path = { test, source, target: spec.host, family: '', campaign: view.campaign };
  app.innerHTML = `<h1>${esc(test)} ${esc(source)} → ${esc(spec.host || '')}${r.title ? ` · ${esc(r.title)}` : ''}</h1>
    <p class="result-meta">started <time>${esc(r.start)}</time> · ${Number(r.duration_s || 0).toFixed(1)} s
      ${spec.direction ? ` · ${esc(spec.direction)}` : ''}${r.interrupted ? ' · <b>interrupted</b>' : ''}
      · <a href="${pathHref(path)}">the path's history</a>
      · <a href="${resultsHref({ test, target: spec.host })}">its results</a></p>
    ${kept.length ? `<p class="kept">${kept.join(' · ')}</p>` : ''}
    <ul class="labels">${labels.map(([k, v]) => `<li class="label" data-key="${esc(k)}"><a href="${resultsHref({ label: `${k}=${v}` })}">${esc(k)}=${esc(v)}</a></li>`).join('')}</ul>
    ${rows.length ? `<table class="result-figures">
      <thead><tr><th>direction</th><th>throughput</th><th>loss</th><th>PDR</th><th>jitter</th><th>RTT (median)</th><th>retransmits</th></tr></thead>
      <tbody>${rows.map(figuresRow).join('')}</tbody>
    </table>` : ''}
    <p class="id">result <code>${esc(r.id)}</code></p>`;
  if (test === 'trace') {
    await renderTrace(app, r, ctx);
  } else if (view.chart && view.chart.panels.length) {
    const drawn = drawChart(app, view.chart, { time: false });
    ctx.onCleanup(() => drawn.destroy());
  } else {
    app.insertAdjacentHTML('beforeend', '<p class="empty">no figures per interval were kept for this result</p>');
  }
}
