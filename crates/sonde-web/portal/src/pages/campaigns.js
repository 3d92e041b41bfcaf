// Campaigns: each plan the agent runs, paused or not, its runs counted
// by state, the last one, missed ones and the next.

import { get } from '../api.js';
import { ago, esc, utc } from '../format.js';

export function runCounts(runs) {
  return Object.entries(runs || {})
    .map(([state, n]) => `<span class="run-state state-${esc(state)}">${esc(n)} ${esc(state)}</span>`)
    .join(' ');
}

export function when(ns) {
  return ns === null || ns === undefined ? '–' : `<span title="${esc(utc(ns))}">${esc(ago(ns))}</span>`;
}

/** Redrawn this often while open. */
export const REFRESH_S = 60;

export async function render(app, params, ctx) {
  const list = await get('campaigns', {}, ctx.signal);
  const rows = list.map((c) => `<tr data-campaign="${esc(c.name)}">
      <td><a href="#/campaign/${encodeURIComponent(c.name)}">${esc(c.name)}</a>${c.paused ? ' <span class="paused">paused</span>' : ''}</td>
      <td>${runCounts(c.runs)}</td>
      <td>${c.last ? `${esc(c.last.state)} ${when(c.last.scheduled_ns)}` : '–'}</td>
      <td class="num">${(c.missed || []).length}</td>
      <td>${when(c.next_ns)}</td>
      <td class="why">${esc(c.plan_error || '')}${(c.errors || []).length ? ` ${c.errors.length} failed steps` : ''}</td>
    </tr>`);
  app.innerHTML = `<h1>Campaigns</h1>
    ${list.length === 0 ? '<p class="empty">No campaign has run here (sonde serve --campaigns DIR, or sonde campaign run PLAN --archive).</p>' : `
    <table class="campaigns"><thead><tr><th>campaign</th><th>runs</th><th>last</th><th>missed</th><th>next</th><th>problems</th></tr></thead>
    <tbody>${rows.join('')}</tbody></table>`}`;
}
