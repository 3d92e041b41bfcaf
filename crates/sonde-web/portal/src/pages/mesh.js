// Mesh grid (as MaDDash's): agents × agents, a row per source and a
// column per target; each cell split along its diagonal, forward
// (source → target) upper left and reverse lower right, each half
// coloured by the status of its latest result. A cell opens the pair's
// path page: its latest result says the test and the target's address
// (the grid names agents as campaigns name their endpoints).

import { get } from '../api.js';
import { ago, esc, METRICS, metricOf, metricValue } from '../format.js';
import { legend, statusOf, STATUS } from '../status.js';
import { pathHref } from './links.js';

function half(which, cell, metric) {
  const status = cell && STATUS[cell.status] ? cell.status : 'unknown';
  const what = cell
    ? `${which}: ${status}, ${metricValue(metric, cell.value)}, ${ago(cell.start_ns)}`
    : `${which}: nothing measured`;
  return `<span class="half ${which} status-${status}" data-half="${which}" data-status="${status}" title="${esc(what)}"><i>${statusOf(status).symbol}</i></span>`;
}

/** Redrawn this often while open. */
export const REFRESH_S = 60;

export async function render(app, params, ctx) {
  const metric = metricOf(params.get('metric')) || 'rtt_p50_ms';
  const mesh = await get('mesh', { metric }, ctx.signal);
  const at = new Map(mesh.cells.map((c) => [`${c.source}\u0000${c.target}`, c]));
  const head = mesh.agents.map((a) => `<th class="target" scope="col"><span>${esc(a)}</span></th>`).join('');
  const rows = mesh.agents
    .map((src) => `<tr><th scope="row">${esc(src)}</th>${mesh.agents
      .map((dst) => {
        const c = at.get(`${src}\u0000${dst}`);
        if (!c) return `<td class="none${src === dst ? ' self' : ''}"></td>`;
        const latest = c.forward || c.reverse;
        return `<td><a class="cell" href="${pathHref({ source: src, target: dst }, metric)}" data-result="${esc(latest ? latest.result_id : '')}" data-source="${esc(src)}" data-target="${esc(dst)}">${half('forward', c.forward, metric)}${half('reverse', c.reverse, metric)}</a></td>`;
      })
      .join('')}</tr>`)
    .join('');
  app.innerHTML = `<h1>Mesh</h1>
    <div class="controls"><label>metric <select name="metric">${Object.entries(METRICS)
      .map(([k, m]) => `<option value="${k}" ${k === metric ? 'selected' : ''}>${m.label} (${m.unit})</option>`)
      .join('')}</select></label></div>
    ${legend()}
    <p class="hint">A row per source, a column per target; the upper left half of a cell is forward (source → target), the lower right reverse. A cell opens the pair's history.</p>
    ${mesh.agents.length === 0 ? '<p class="empty">No paths measured yet.</p>' : `<table class="mesh"><thead><tr><th></th>${head}</tr></thead><tbody>${rows}</tbody></table>`}`;
  for (const a of app.querySelectorAll('a.cell[data-result]')) {
    a.addEventListener('click', async (e) => {
      if (!a.dataset.result) return;
      e.preventDefault();
      try {
        const r = await get(`results/${a.dataset.result}`, {}, ctx.signal);
        const spec = r.spec || {};
        location.hash = pathHref({ test: r.test || spec.test, source: a.dataset.source, target: spec.host || a.dataset.target }, metric).slice(1);
      } catch (err) {
        if (err.name !== 'AbortError') location.hash = a.getAttribute('href').slice(1);
      }
    });
  }
  app.querySelector('select[name=metric]').addEventListener('change', (e) => {
    location.hash = `#/mesh?metric=${e.target.value}`;
  });
}
