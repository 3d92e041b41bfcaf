// One incident: its fields, addresses with role and owner, comments and
// the history of every change.

import { get } from '../api.js';
import { esc, utc } from '../format.js';

export const REFRESH_S = 60;

export async function render(app, params, ctx, rest) {
  const id = rest[0] || params.get('id') || '';
  const i = await get(`incidents/${encodeURIComponent(id)}`, {}, ctx.signal);
  const addresses = i.addresses.map((a) => `<tr><td>${esc(a.address)}</td><td>${esc(a.role)}</td>
      <td>${a.owner ? `<a href="#/incidents?owner=${encodeURIComponent(a.owner)}">${esc(a.owner)}</a>` : '–'}</td></tr>`);
  const comments = i.comments.map((c) => `<li><span class="when">${esc(utc(c.at_ns))}</span> <b>${esc(c.author)}</b>: ${esc(c.text)}</li>`);
  const history = i.history.map((h) => `<tr><td>${esc(utc(h.at_ns))}</td><td>${esc(h.actor)}</td><td>${esc(h.what)}</td>
      <td>${h.old === null ? '' : `${esc(h.old)} → `}${esc(h.new ?? '')}</td></tr>`);
  app.innerHTML = `<h1>Incident ${esc(i.id)}: ${esc(i.summary)}</h1>
    <dl class="incident" data-status="${esc(i.status)}" data-state="${esc(i.state)}">
      <dt>type</dt><dd>${esc(i.type)}</dd>
      <dt>state</dt><dd class="state">${esc(i.state)}</dd>
      <dt>status</dt><dd class="status">${esc(i.status)}</dd>
      <dt>severity</dt><dd>${esc(i.severity)}</dd>
      <dt>from</dt><dd>${esc(i.source)}</dd>
      <dt>opened</dt><dd>${esc(utc(i.opened_ns))}</dd>
      <dt>changed</dt><dd>${esc(utc(i.updated_ns))}</dd>
    </dl>
    <h2>Addresses</h2>
    <table class="addresses"><thead><tr><th>address</th><th>role</th><th>owner</th></tr></thead><tbody>${addresses.join('')}</tbody></table>
    <h2>Comments</h2>
    ${comments.length ? `<ul class="comments">${comments.join('')}</ul>` : '<p class="empty">None.</p>'}
    <h2>History</h2>
    <table class="history"><thead><tr><th>when</th><th>who</th><th>what</th><th>change</th></tr></thead><tbody>${history.join('')}</tbody></table>
    <p><a href="#/incidents">All incidents</a></p>`;
}
