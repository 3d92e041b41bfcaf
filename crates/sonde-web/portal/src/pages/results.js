// Results (#/results?test=&target=&direction=&family=&campaign=&label=K=V&since=&until=):
// the archive's results that match, newest first, each row opening its
// own page. A heat map's cell opens the results of its hour here.

import { get } from '../api.js';
import { esc, metricValue, utc } from '../format.js';

const FILTERS = ['test', 'target', 'direction', 'family', 'campaign', 'label', 'since', 'until'];

/** `#/results?...` for these filters (empty ones left out). */
export function resultsHref(filters) {
  const q = new URLSearchParams();
  for (const k of FILTERS) {
    if (filters[k] !== null && filters[k] !== undefined && filters[k] !== '') q.set(k, filters[k]);
  }
  return `#/results?${q}`;
}

/** A result's figures, each direction on its own (never their sum). */
function figures(summary) {
  const parts = [];
  for (const d of ['forward', 'reverse']) {
    const f = summary[d];
    if (f) parts.push(`${d} ${metricValue('throughput_bps', f.throughput_bps)}${f.loss_pct != null ? `, loss ${metricValue('loss_pct', f.loss_pct)}` : ''}`);
  }
  if (parts.length === 0 && summary.round_trip) {
    const rt = summary.round_trip;
    parts.push(`RTT ${metricValue('rtt_ms', rt.rtt_ms ? rt.rtt_ms.p50 : null)}${rt.loss_pct != null ? `, loss ${metricValue('loss_pct', rt.loss_pct)}` : ''}`);
  }
  return parts.join('; ');
}

export async function render(app, params, ctx) {
  const query = { limit: 200 };
  for (const k of FILTERS) if (params.get(k)) query[k] = params.get(k);
  const list = await get('results', query, ctx.signal);
  const said = FILTERS.filter((k) => params.get(k)).map((k) => {
    const v = params.get(k);
    return k === 'since' || k === 'until' ? `${k} ${utc(Number(v) * 1e9)}` : `${k} ${v}`;
  });
  const rows = list.map((r) => {
    const spec = r.spec || {};
    const source = (r.env && r.env.client && r.env.client.hostname) || '';
    return `<tr class="result" data-id="${esc(r.id)}">
      <td><a href="#/result/${encodeURIComponent(r.id)}">${esc(r.start)}</a></td>
      <td>${esc(r.test || '')}</td><td>${esc(source)} → ${esc(spec.host || '')}</td>
      <td>${esc(spec.direction || '')}</td><td>${esc(figures(r.summary || {}))}</td></tr>`;
  });
  app.innerHTML = `<h1>Results</h1>
    <p class="summary">${list.length}${list.length === 200 ? ' (the newest 200)' : ''} results${said.length ? `: ${esc(said.join(', '))}` : ''}</p>
    ${list.length === 0 ? '<p class="empty">no results match</p>' : `<table class="results">
      <thead><tr><th>started (UTC)</th><th>test</th><th>path</th><th>direction</th><th>figures</th></tr></thead>
      <tbody>${rows.join('')}</tbody></table>`}`;
  for (const tr of app.querySelectorAll('tr.result')) {
    tr.addEventListener('click', (e) => {
      if (e.target.closest('a')) return;
      location.hash = tr.querySelector('a').getAttribute('href');
    });
  }
}
