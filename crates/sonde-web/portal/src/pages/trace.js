// A trace's part of its result page (#/result/ID of a trace): the path
// hop by hop (each answering address, each probe's round trip, `*` for
// none, the DSCP the probe arrived with and the hop where it changed),
// the path MTU when the trace looked for it, and the history of route
// changes toward its target (GET /api/v1/path-changes), newest first,
// each linking to the trace that moved and the one before it.

import { get } from '../api.js';
import { esc, utc } from '../format.js';

const DSCP = {
  0: 'CS0', 8: 'CS1', 10: 'AF11', 12: 'AF12', 14: 'AF13', 16: 'CS2', 18: 'AF21', 20: 'AF22',
  22: 'AF23', 24: 'CS3', 26: 'AF31', 28: 'AF32', 30: 'AF33', 32: 'CS4', 34: 'AF41', 36: 'AF42',
  38: 'AF43', 40: 'CS5', 44: 'VOICE-ADMIT', 46: 'EF', 48: 'CS6', 56: 'CS7',
};

/** A DSCP by its name, or its number where it has none. */
export function dscpName(v) {
  return DSCP[v] ?? String(v);
}

/** The addresses that answered a hop, the most frequent first; `*` for none. */
function addresses(hop) {
  const count = new Map();
  for (const p of hop.probes) if (p) count.set(p.from, (count.get(p.from) || 0) + 1);
  const seen = [...count.entries()].sort((a, b) => b[1] - a[1]).map(([a]) => a);
  return seen.length ? seen.join(', ') : '*';
}

function hopRow(hop, width, t) {
  const probes = [];
  for (let k = 0; k < width; k += 1) {
    const p = hop.probes[k];
    probes.push(p === undefined ? '<td></td>' : `<td class="num">${p ? Number(p.rtt_ms).toFixed(3) : '*'}</td>`);
  }
  const arrived = hop.probes.find((p) => p && p.dscp !== null && p.dscp !== undefined);
  const changed = t.dscp_changed_at === hop.ttl;
  const dscp = arrived
    ? `${esc(dscpName(arrived.dscp))}${changed ? ` <b class="dscp-changed">changed here (sent ${esc(dscpName(t.dscp_sent))})</b>` : ''}`
    : '';
  return `<tr class="hop" data-ttl="${hop.ttl}"><td class="num">${hop.ttl}</td><td class="address">${esc(addresses(hop))}</td>${probes.join('')}<td>${dscp}</td></tr>`;
}

function route(list) {
  return (list || []).map((a) => esc(a ?? '*')).join(' → ');
}

function changeItem(c) {
  return `<li class="route-change" data-hop="${c.at_hop}" data-result="${esc(c.result_id)}">
    <time>${esc(utc(c.at_ns))}</time>: from ${esc(c.source_addr)}, the route changed at hop ${c.at_hop}
    (<a href="#/result/${encodeURIComponent(c.result_id)}">this trace</a>,
    <a href="#/result/${encodeURIComponent(c.previous_id)}">the one before</a>)
    <div class="routes">before: ${route(c.before)}<br>after: ${route(c.after)}</div></li>`;
}

/** Appends the trace `r`'s hops and its target's route changes to `app`. */
export async function renderTrace(app, r, ctx) {
  const t = r.trace;
  if (!t) return;
  const width = Math.max(0, ...t.hops.map((h) => h.probes.length));
  const heads = Array.from({ length: width }, (_, k) => `<th>probe ${k + 1} (ms)</th>`).join('');
  const mtu = t.path_mtu ? `<p class="path-mtu">path MTU ${t.path_mtu} bytes</p>` : '';
  const arrived = t.arrived ? '' : '<p class="not-arrived">the target did not answer</p>';
  app.insertAdjacentHTML('beforeend', `<h2>The path to ${esc(t.target)}</h2>
    <table class="trace-hops"><thead><tr><th>hop</th><th>address</th>${heads}<th>DSCP arrived</th></tr></thead>
    <tbody>${t.hops.map((h) => hopRow(h, width, t)).join('')}</tbody></table>${mtu}${arrived}
    <section class="route-changes"><h2>Route changes toward ${esc(t.target)}</h2><p class="loading">…</p></section>`);
  const section = app.querySelector('section.route-changes');
  const changes = await get('path-changes', { target: t.target, limit: 50 }, ctx.signal);
  section.querySelector('.loading').remove();
  section.insertAdjacentHTML('beforeend', changes.length
    ? `<ul class="route-changes">${changes.map(changeItem).join('')}</ul>`
    : `<p class="empty">no route change recorded toward ${esc(t.target)}</p>`);
}
