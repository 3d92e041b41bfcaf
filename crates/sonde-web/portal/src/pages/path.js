// Path page: one metric's history over a range, a series per direction,
// drawn with zoom (drag), reset (double-click) and hover. Without a
// target it lists the paths to choose from.

import { get } from '../api.js';
import { drawChart } from '../charts.js';
import { esc, mainMetric, metricOf, METRICS } from '../format.js';
import { badge } from '../status.js';
import { pathHref } from './links.js';
import { rangeControls, rangeOf } from './range.js';

const FILTERS = ['test', 'target', 'direction', 'family', 'campaign', 'label'];

async function choose(app, ctx) {
  const data = await get('overview', {}, ctx.signal);
  app.innerHTML = `<h1>Paths</h1><p>Choose a path:</p><ul class="choices">${data.paths
    .map((p) => `<li>${badge(p.status)} <a href="${pathHref(p)}">${esc(p.test)} ${esc(p.source)} → ${esc(p.target)} ${esc(p.direction)} ${esc(p.family || '')}${p.campaign ? ` (${esc(p.campaign)})` : ''}</a></li>`)
    .join('')}</ul>`;
}

export async function render(app, params, ctx) {
  if (!params.get('target') && !params.get('test') && !params.get('label')) return choose(app, ctx);
  const metric = metricOf(params.get('metric')) || mainMetric(params.get('test'));
  const range = rangeOf(params);
  const go = (next) => {
    location.hash = `#/path?${next}`;
  };
  const query = { metric, since: range.since, until: range.until };
  for (const k of FILTERS) query[k] = params.get(k);
  const chart = await get('chart', query, ctx.signal);

  const who = [params.get('test'), params.get('source') && `${params.get('source')} →`, params.get('target'), params.get('direction'), params.get('family'), params.get('campaign') && `campaign ${params.get('campaign')}`, params.get('label') && `label ${params.get('label')}`]
    .filter(Boolean)
    .join(' ');
  app.innerHTML = `<h1>${esc(who)}</h1>
    <div class="controls">
      <label>metric <select name="metric">${Object.entries(METRICS)
        .map(([k, m]) => `<option value="${k}" ${k === metric ? 'selected' : ''}>${m.label} (${m.unit})</option>`)
        .join('')}</select></label>
      <label>direction <select name="direction">${['', 'forward', 'reverse', 'bidir', 'round_trip']
        .map((d) => `<option value="${d}" ${d === (params.get('direction') || '') ? 'selected' : ''}>${d || 'every one'}</option>`)
        .join('')}</select></label>
    </div>
    <p class="hint">Drag across a chart to zoom, double-click to zoom out; the legend shows the values under the pointer.</p>`;
  app.querySelector('.controls').append(rangeControls(params, range, go));
  for (const sel of app.querySelectorAll('.controls select')) {
    sel.addEventListener('change', () => {
      const next = new URLSearchParams(params);
      if (sel.value) next.set(sel.name, sel.value);
      else next.delete(sel.name);
      go(next);
    });
  }
  // A zoom becomes the page's address (range=custom), so a zoomed view
  // can be kept or sent; the page is not drawn again.
  const onZoom = (min, max) => {
    if (!(min < max)) return;
    const next = new URLSearchParams(params);
    next.set('range', 'custom');
    next.set('since', String(Math.floor(min)));
    next.set('until', String(Math.ceil(max)));
    history.replaceState(null, '', `#/path?${next}`);
  };
  const drawn = drawChart(app, chart, { xRange: [range.since, range.until], onZoom });
  ctx.onCleanup(() => drawn.destroy());
}
