// One campaign: its status, its plan (TOML as kept in the archive), its
// runs with their state (missed ones with the reason), and a run's
// events on a click.

import { get } from '../api.js';
import { esc, utc } from '../format.js';
import { runCounts, when } from './campaigns.js';

/** Runs listed at first (a campaign of months has thousands). */
const SHOWN = 50;

function runRow(r) {
  return `<tr class="run state-${esc(r.state)}" data-run="${esc(r.id)}">
    <td>${esc(utc(r.scheduled_ns))}</td><td><span class="run-state state-${esc(r.state)}">${esc(r.state)}</span></td>
    <td class="why">${esc(r.reason || '')}</td>
    <td><button type="button" class="events" data-run="${esc(r.id)}">events</button></td></tr>`;
}

export async function render(app, params, ctx, rest) {
  const name = rest[0] || '';
  const c = await get(`campaigns/${encodeURIComponent(name)}`, {}, ctx.signal);
  const s = c.status;
  const missed = s.missed || [];
  const partial = s.partial || [];
  const over = c.overrides ? Object.entries(c.overrides).map(([k, v]) =>
    k === 'endpoints' ? Object.entries(v).map(([n, a]) => `endpoint ${n} = ${a}`).join(', ') : `${k} ${v}`).join(', ') : '';
  const errors = s.errors || [];
  const shown = c.runs.slice(0, SHOWN);
  app.innerHTML = `<h1>Campaign ${esc(s.name)}${s.paused ? ' <span class="paused">paused</span>' : ''}</h1>
    <div class="campaign-top"><div>
    <dl class="facts">
      <dt>runs</dt><dd>${runCounts(s.runs)}</dd>
      <dt>last</dt><dd>${s.last ? `${esc(s.last.state)}, scheduled ${when(s.last.scheduled_ns)}` : '–'}</dd>
      <dt>next</dt><dd>${s.next_ns ? `${when(s.next_ns)} (${esc(utc(s.next_ns))})` : 'none: the schedule has ended or the campaign is paused'}</dd>
      ${s.plan_error ? `<dt>plan</dt><dd class="why">${esc(s.plan_error)}</dd>` : ''}
    </dl>
    <h2>Missed runs (${missed.length})</h2>
    ${missed.length ? `<table class="runs missed"><thead><tr><th>scheduled</th><th>state</th><th>why</th><th></th></tr></thead><tbody>${missed.map(runRow).join('')}</tbody></table>` : '<p>None.</p>'}
    ${partial.length ? `<h2>Partial runs (${partial.length})</h2><table class="runs partial"><thead><tr><th>scheduled</th><th>state</th><th>why</th><th></th></tr></thead><tbody>${partial.map(runRow).join('')}</tbody></table>` : ''}
    ${errors.length ? `<h2>Failed steps</h2><ul class="errors">${errors.map(([id, detail]) => `<li><code>${esc(id)}</code> ${esc(detail)}</li>`).join('')}</ul>` : ''}
    <p><a href="#/path?campaign=${encodeURIComponent(s.name)}&test=tcp">its TCP throughput</a> ·
       <a href="#/heatmap?test=tcp">day heat map</a></p>
    </div><div>
    <h2>Plan</h2>
    ${over ? `<p class="overrides">Run with overrides: <code>${esc(over)}</code> (the plan below is as written)</p>` : ''}
    <pre class="plan">${esc(c.plan)}</pre>
    </div></div>
    <h2>Runs (${c.runs.length}${c.runs.length > shown.length ? `, the newest ${shown.length} shown` : ''})</h2>
    <table class="runs all"><thead><tr><th>scheduled</th><th>state</th><th>why</th><th></th></tr></thead><tbody>${shown.map(runRow).join('')}</tbody></table>
    ${c.runs.length > shown.length ? '<button type="button" class="all-runs">show every run</button>' : ''}`;
  const more = app.querySelector('button.all-runs');
  if (more) {
    more.addEventListener('click', () => {
      app.querySelector('table.runs.all tbody').innerHTML = c.runs.map(runRow).join('');
      more.remove();
    });
  }
  const open = async (e) => {
    const b = e.target.closest('button.events');
    if (!b) return;
    const row = b.closest('tr');
    if (row.nextElementSibling && row.nextElementSibling.classList.contains('run-events')) {
      row.nextElementSibling.remove();
      return;
    }
    const tr = document.createElement('tr');
    tr.className = 'run-events';
    tr.innerHTML = '<td colspan="4">…</td>';
    row.after(tr);
    try {
      const events = await get(`runs/${encodeURIComponent(b.dataset.run)}/events`, {}, ctx.signal);
      tr.firstElementChild.innerHTML = events.length
        ? `<ul>${events.map((ev) => `<li>${esc(utc(ev.at_ns))} <b>${esc(ev.kind)}</b> ${esc(ev.detail)}</li>`).join('')}</ul>`
        : 'no events';
    } catch (err) {
      tr.firstElementChild.textContent = err.explain ? err.explain() : String(err);
    }
  };
  for (const table of app.querySelectorAll('table.runs')) table.addEventListener('click', open);
}
