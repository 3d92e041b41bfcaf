// Load beside latency (003 Figs 1–4): an interface's bit rate (rx, tx)
// from the agent's counter samples, above the RTT toward a target, over
// the same time; the two panels share the cursor and the zoom.

import { get } from '../api.js';
import { drawChart } from '../charts.js';
import { esc } from '../format.js';
import { rangeControls, rangeOf } from './range.js';

export async function render(app, params, ctx) {
  const [interfaces, overview] = await Promise.all([
    get('interfaces', {}, ctx.signal),
    get('overview', {}, ctx.signal).catch(() => ({ paths: [] })),
  ]);
  const names = interfaces.map((i) => i.name);
  const iface = params.get('interface') || names[0] || '';
  const targets = [...new Set(overview.paths.filter((p) => p.latest && p.latest.rtt_ms !== null && p.latest.rtt_ms !== undefined).map((p) => p.target))].sort();
  const target = params.get('target') || targets[0] || '';
  const range = rangeOf(params, '1h');
  const go = (next) => {
    location.hash = `#/load?${next}`;
  };
  app.innerHTML = `<h1>Load beside latency</h1>
    <div class="controls">
      <label>interface <select name="interface">${names
        .map((n) => `<option ${n === iface ? 'selected' : ''}>${esc(n)}</option>`)
        .join('')}</select></label>
      <label>RTT toward <select name="target">${['', ...targets]
        .map((t) => `<option value="${esc(t)}" ${t === target ? 'selected' : ''}>${esc(t || 'none')}</option>`)
        .join('')}</select></label>
    </div>
    <p class="hint">The link's load above the RTT over the same time: drag across either to zoom both.</p>`;
  app.querySelector('.controls').append(rangeControls(params, range, go));
  for (const sel of app.querySelectorAll('.controls select')) {
    sel.addEventListener('change', () => {
      const next = new URLSearchParams(params);
      next.set(sel.name, sel.value);
      go(next);
    });
  }
  if (!iface) {
    app.insertAdjacentHTML('beforeend', '<p class="empty">The agent samples no interface (see interface_interval under [http] in its configuration).</p>');
    return;
  }
  const chart = await get('load', { interface: iface, target, since: range.since, until: range.until }, ctx.signal);
  const drawn = drawChart(app, { ...chart, columns: 1 }, { height: 260, xRange: [range.since, range.until] });
  ctx.onCleanup(() => drawn.destroy());
}
