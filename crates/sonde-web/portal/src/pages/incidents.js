// Incidents (docs/incidents.md): newest first, filtered by status and
// owner; each row links to its incident page.

import { get } from '../api.js';
import { esc, utc } from '../format.js';

/** Redrawn this often while open. */
export const REFRESH_S = 60;

export function owners(incident) {
  const seen = [];
  for (const a of incident.addresses || []) {
    if (a.owner && !seen.includes(a.owner)) seen.push(a.owner);
  }
  return seen;
}

export async function render(app, params, ctx) {
  const query = {};
  for (const k of ['status', 'owner']) {
    if (params.get(k)) query[k] = params.get(k);
  }
  const list = await get('incidents', query, ctx.signal);
  const status = params.get('status') || '';
  const choices = ['', 'open', 'stalled', 'closed']
    .map((s) => `<a href="#/incidents${s ? `?status=${s}` : ''}" class="${s === status ? 'here' : ''}">${s || 'all'}</a>`)
    .join(' ');
  const rows = list.map((i) => `<tr data-incident="${esc(i.id)}" class="status-${esc(i.status)} severity-${esc(i.severity)}">
      <td class="num"><a href="#/incident/${encodeURIComponent(i.id)}">${esc(i.id)}</a></td>
      <td>${esc(utc(i.opened_ns))}</td>
      <td>${esc(i.type)}</td>
      <td>${esc(i.severity)}</td>
      <td>${esc(i.state)}</td>
      <td>${esc(i.status)}</td>
      <td>${owners(i).map((o) => `<a href="#/incidents?owner=${encodeURIComponent(o)}">${esc(o)}</a>`).join(', ') || '–'}</td>
      <td>${esc(i.summary)}</td>
    </tr>`);
  app.innerHTML = `<h1>Incidents</h1>
    <p class="filters">${choices}${params.get('owner') ? ` · owner ${esc(params.get('owner'))}` : ''}</p>
    ${list.length === 0 ? '<p class="empty">No incident (sonde incident open, or POST /api/v1/incidents/import).</p>' : `
    <table class="incidents"><thead><tr><th>#</th><th>opened</th><th>type</th><th>severity</th><th>state</th><th>status</th><th>owners</th><th>summary</th></tr></thead>
    <tbody>${rows.join('')}</tbody></table>`}`;
}
