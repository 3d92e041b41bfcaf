// Overview: every path's latest result, coloured by its status against
// the agent's thresholds (worst first); a row opens the path's page. Above
// them, the alerts raised and the latest notices (docs/alerts.md).

import { get } from '../api.js';
import { ago, esc, metricValue, utc } from '../format.js';
import { badge, legend, SEVERITY } from '../status.js';
import { pathHref } from './links.js';

function thresholdText(t) {
  if (!t) return '';
  const parts = [];
  for (const [k, v] of Object.entries(t)) {
    if (v && typeof v === 'object' && 'warn' in v) parts.push(`${k}: warn ${v.warn}, crit ${v.crit}`);
    else if (v !== null && typeof v !== 'object') parts.push(`${k}: ${v}`);
  }
  return parts.join(' · ');
}

/** Redrawn this often while open. */
export const REFRESH_S = 60;

/** The alerts raised now, and the latest notices; empty without rules. */
function alertsSection(a) {
  if (!a || (a.states.length === 0 && a.events.length === 0)) return '';
  const raised = a.states.filter((s) => s.up).map((s) => `<li class="alert-raised" data-rule="${esc(s.rule)}">
      ${badge('crit')} <b>${esc(s.rule)}</b> on ${esc(s.label)}
      <span title="${esc(utc(s.since_ns))}">since ${esc(ago(s.since_ns))}</span>
      ${s.incident_id != null ? ` · incident ${esc(s.incident_id)}` : ''}</li>`);
  const events = a.events.slice(0, 10).map((e) => `<tr class="alert-event" data-edge="${esc(e.edge)}">
      <td title="${esc(utc(e.at_ns))}">${esc(ago(e.at_ns))}</td><td>${esc(e.rule)}</td><td>${esc(e.edge)}</td>
      <td>${esc(e.label)}</td><td class="num">${e.value == null ? 'unknown' : esc(e.value)}</td></tr>`);
  return `<section class="alerts"><h2>Alerts</h2>
    <p class="summary">${a.raised} raised</p>
    ${raised.length ? `<ul class="raised">${raised.join('')}</ul>` : ''}
    ${events.length ? `<table class="alert-events"><thead><tr><th>when</th><th>alert</th><th>edge</th><th>path</th><th>value</th></tr></thead>
      <tbody>${events.join('')}</tbody></table>` : ''}</section>`;
}

export async function render(app, params, ctx) {
  const [data, alerts] = await Promise.all([
    get('overview', {}, ctx.signal),
    get('alerts', { limit: 10 }, ctx.signal),
  ]);
  const paths = [...data.paths].sort(
    (a, b) => SEVERITY.indexOf(a.status) - SEVERITY.indexOf(b.status) || a.key.localeCompare(b.key),
  );
  const counts = {};
  for (const p of paths) counts[p.status] = (counts[p.status] || 0) + 1;
  const summary = SEVERITY.filter((s) => counts[s]).map((s) => `${badge(s)} ${counts[s]}`).join(' ');
  const rows = paths.map((p) => {
    const l = p.latest || {};
    return `<tr class="path status-row-${esc(p.status)}" data-key="${esc(p.key)}" data-status="${esc(p.status)}">
      <td>${badge(p.status)}</td>
      <td><a href="${pathHref(p)}">${esc(p.test)}</a></td>
      <td>${esc(p.source)} → ${esc(p.target)}</td>
      <td>${esc(p.direction)}</td>
      <td>${esc(p.family || '')}</td>
      <td>${esc(p.campaign || '')}${p.step ? ` · ${esc(p.step)}` : ''}</td>
      <td class="num">${metricValue('throughput_bps', l.throughput_bps)}</td>
      <td class="num">${metricValue('loss_pct', l.loss_pct)}</td>
      <td class="num">${metricValue('jitter_ms', l.jitter_ms)}</td>
      <td class="num">${metricValue('rtt_ms', l.rtt_ms)}</td>
      <td title="${esc(utc(l.start_ns))}">${l.id ? `<a class="latest" href="#/result/${encodeURIComponent(l.id)}">${esc(ago(l.start_ns))}</a>` : esc(ago(l.start_ns))}</td>
      <td class="why">${esc(p.why || '')}</td>
    </tr>`;
  });
  app.innerHTML = `<h1>Overview</h1>
    <p class="summary">${paths.length} paths ${summary} <span class="generated">as of ${esc(utc(data.generated_ns))}</span></p>
    ${alertsSection(alerts)}
    ${legend()}
    ${paths.length === 0 ? '<p class="empty">The archive holds no results yet.</p>' : `
    <table class="paths">
      <thead><tr><th>status</th><th>test</th><th>path</th><th>direction</th><th>family</th><th>campaign · step</th>
      <th>throughput</th><th>loss</th><th>jitter</th><th>RTT</th><th>latest</th><th>why</th></tr></thead>
      <tbody>${rows.join('')}</tbody>
    </table>`}
    <p class="thresholds">thresholds: ${esc(thresholdText(data.thresholds))}</p>`;
  for (const tr of app.querySelectorAll('tr.path')) {
    tr.addEventListener('click', (e) => {
      if (e.target.closest('a')) return;
      location.hash = tr.querySelector('a').getAttribute('href');
    });
  }
}
