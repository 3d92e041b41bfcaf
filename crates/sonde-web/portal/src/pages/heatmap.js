// Day heat maps: a metric by hour of day (rows, UTC) and day (columns),
// for a test toward a target, over a week, 30 days, a year or a chosen
// range. A cell opens the results of its hour.

import { get } from '../api.js';
import { drawHeatMap } from '../heatmap.js';
import { esc, mainMetric, metricOf, METRICS, unitOf } from '../format.js';
import { DAYS, rangeControls, rangeOf } from './range.js';
import { resultsHref } from './results.js';

const FILTERS = ['test', 'target', 'direction', 'label'];

export async function render(app, params, ctx) {
  const metric = metricOf(params.get('metric')) || mainMetric(params.get('test'));
  const range = rangeOf(params, '30d', DAYS);
  const go = (next) => {
    location.hash = `#/heatmap?${next}`;
  };
  const query = { metric, since: range.since, until: range.until };
  for (const k of FILTERS) query[k] = params.get(k);
  // The choices of test and target come from the overview, which may
  // answer later than the heat map: the map is drawn without waiting.
  const overview = get('overview', {}, ctx.signal).catch(() => ({ paths: [] }));
  const map = await get('heatmap', query, ctx.signal);
  const options = (name, values) => [...new Set(['', params.get(name) || '', ...values])]
    .map((v) => `<option value="${esc(v)}" ${v === (params.get(name) || '') ? 'selected' : ''}>${esc(v || 'any')}</option>`)
    .join('');
  const select = (name, values, label) => `<label>${label} <select name="${name}">${options(name, values)}</select></label>`;
  app.innerHTML = `<h1>Day heat map</h1>
    <div class="controls">
      <label>metric <select name="metric">${Object.entries(METRICS)
        .map(([k, m]) => `<option value="${k}" ${k === metric ? 'selected' : ''}>${m.label} (${m.unit})</option>`)
        .join('')}</select></label>
      ${select('test', [], 'test')}
      ${select('target', [], 'target')}
      ${select('direction', ['forward', 'reverse', 'bidir', 'round_trip'], 'direction')}
    </div>`;
  app.querySelector('.controls').append(rangeControls(params, range, go, DAYS));
  for (const sel of app.querySelectorAll('.controls select')) {
    sel.addEventListener('change', () => {
      const next = new URLSearchParams(params);
      if (sel.value) next.set(sel.name, sel.value);
      else next.delete(sel.name);
      go(next);
    });
  }
  const unit = unitOf(map.scale_label);
  // A cell opens the results of its hour (each opens its own page).
  const openHour = (day, hour) => {
    const since = Date.parse(`${day}T${hour}:00:00Z`) / 1000;
    if (!Number.isFinite(since)) return;
    const q = { since: String(since), until: String(since + 3600) };
    for (const k of FILTERS) if (params.get(k)) q[k] = params.get(k);
    location.hash = resultsHref(q);
  };
  drawHeatMap(app, map, (v) => `${Number(v.toPrecision(4))}${unit === '%' ? ' %' : ` ${unit}`}`, openHour);
  overview.then((o) => {
    if (ctx.signal.aborted) return;
    for (const [name, key] of [['test', 'test'], ['target', 'target']]) {
      const values = [...new Set(o.paths.map((p) => p[key]))].sort();
      const sel = app.querySelector(`select[name=${name}]`);
      if (sel) sel.innerHTML = options(name, values);
    }
  });
}
