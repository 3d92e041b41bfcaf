// Readings from probes (docs/readings.md): a probe's metric over a UTC
// day, its 15-minute mean, min and max, above the RTT toward a target
// over the same day; the two panels share the cursor and the zoom.

import { get } from '../api.js';
import { drawChart } from '../charts.js';
import { esc } from '../format.js';

const today = () => new Date().toISOString().slice(0, 10);

/** The readings panel of the chart model from the day's points. */
function readingsPanel(day) {
  const series = ['mean', 'min', 'max'].map((k) => ({
    name: k,
    points: day.points.filter((p) => p.count > 0).map((p) => [p.start_ns / 1e9, p[k]]),
  }));
  return { title: `${day.metric} of ${day.probe}`, x_label: 'time (UTC)', y_label: day.unit, series };
}

export async function render(app, params, ctx) {
  const [list, overview] = await Promise.all([
    get('readings/probes', {}, ctx.signal),
    get('overview', {}, ctx.signal).catch(() => ({ paths: [] })),
  ]);
  const keys = list.series.map((s) => `${s.probe}/${s.metric}`);
  const chosen = params.get('series') || keys[0] || '';
  const date = /^\d{4}-\d{2}-\d{2}$/.test(params.get('date') || '') ? params.get('date') : today();
  const targets = [...new Set(overview.paths.filter((p) => p.latest && p.latest.rtt_ms !== null && p.latest.rtt_ms !== undefined).map((p) => p.target))].sort();
  const target = params.get('target') ?? (targets[0] || '');
  const go = (name, value) => {
    const next = new URLSearchParams(params);
    next.set(name, value);
    location.hash = `#/readings?${next}`;
  };
  app.innerHTML = `<h1>Readings</h1>
    <div class="controls">
      <label>reading <select name="series">${keys
        .map((k) => `<option ${k === chosen ? 'selected' : ''}>${esc(k)}</option>`)
        .join('')}</select></label>
      <label>day (UTC) <input type="date" name="date" value="${esc(date)}"></label>
      <label>RTT toward <select name="target">${['', ...targets]
        .map((t) => `<option value="${esc(t)}" ${t === target ? 'selected' : ''}>${esc(t || 'none')}</option>`)
        .join('')}</select></label>
    </div>
    <p class="hint">15-minute mean, min and max of a probe's reading above the network's RTT over the same day: drag across either to zoom both.</p>`;
  for (const el of app.querySelectorAll('.controls select, .controls input')) {
    el.addEventListener('change', () => go(el.name, el.value));
  }
  if (!chosen) {
    app.insertAdjacentHTML('beforeend', '<p class="empty">No readings yet: probes post them to /api/v1/readings or over MQTT (docs/readings.md).</p>');
    return;
  }
  const [probe, metric] = chosen.split('/');
  const since = Date.parse(`${date}T00:00:00Z`) / 1000;
  const until = since + 86400;
  const [day, rtt] = await Promise.all([
    get('readings', { probe, metric, interval: 'day', date }, ctx.signal),
    target ? get('chart', { metric: 'rtt_ms', target, since, until }, ctx.signal).catch(() => null) : null,
  ]);
  const panels = [readingsPanel(day), ...(rtt ? rtt.panels.map((p) => ({ ...p, title: `RTT toward ${target}` })) : [])];
  const drawn = drawChart(app, { panels, columns: 1 }, { height: 240, xRange: [since, until] });
  ctx.onCleanup(() => drawn.destroy());
}
