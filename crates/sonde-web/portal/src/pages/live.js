// Live: tests running on this agent, their intervals (and ping replies)
// drawn as they arrive over the API's event stream; a form starts a test
// through the API (the agent's gate applies; a token is needed), and each
// running test's card has a button that stops it.

import { del, events, get, post, ApiError } from '../api.js';
import { liveChart } from '../charts.js';
import { esc, si, utc } from '../format.js';

function describe(spec) {
  if (!spec) return 'a test';
  const parts = [spec.test, `→ ${spec.host}${spec.port && spec.test !== 'ping' ? ` port ${spec.port}` : ''}`];
  if (spec.direction) parts.push(spec.direction);
  if (spec.time_s) parts.push(`${spec.time_s} s`);
  if (spec.bitrate_bps) parts.push(typeof spec.bitrate_bps === 'number' ? `${si(spec.bitrate_bps)}bit/s` : `${spec.bitrate_bps}bit/s`);
  if (spec.count) parts.push(`${spec.count} pings`);
  return parts.join(' ');
}

/** A card per run: what runs, its state, a chart of what arrives. */
class RunCard {
  constructor(host, run) {
    this.run = run;
    this.el = document.createElement('section');
    this.el.className = 'run-card';
    this.el.dataset.run = run.run_id;
    this.el.dataset.state = 'running';
    this.el.innerHTML = `<h2>${esc(describe(run.spec))}</h2>
      <p class="run-meta">run <code>${esc(run.run_id)}</code>${run.started_ns ? `, started ${esc(utc(run.started_ns))}` : ''} · <span class="run-state">running</span>
      <button type="button" class="stop">stop</button> <span class="stop-answer"></span></p>`;
    host.prepend(this.el);
    const answer = this.el.querySelector('.stop-answer');
    this.el.querySelector('button.stop').addEventListener('click', async () => {
      answer.className = 'stop-answer';
      answer.textContent = 'stopping…';
      try {
        await del(`tests/${encodeURIComponent(run.run_id)}`);
        answer.textContent = 'stopping';
      } catch (err) {
        answer.className = 'stop-answer error';
        answer.textContent = err instanceof ApiError ? err.explain() : String(err);
      }
    });
    const spec = run.spec || {};
    const ping = spec.test === 'ping';
    const xMax = ping ? (spec.count || 0) * (spec.interval_s || 1) : spec.time_s || 0;
    this.chart = liveChart(this.el, ping
      ? { title: 'RTT of each reply', xLabel: 'seconds since start', yLabel: 'RTT (ms)', xMax }
      : { title: 'throughput of each interval', xLabel: 'seconds since start', yLabel: 'throughput (bit/s)', xMax });
    this.replies = false;
  }

  interval(iv) {
    // While a test runs the sender's rate is what is known; the
    // receiver's goodput comes with the result.
    for (const sum of iv.sums || []) {
      const bps = sum.throughput_bps ?? sum.sender_throughput_bps;
      if (bps !== null && bps !== undefined) this.chart.push(sum.direction || 'sum', iv.end_s, bps);
    }
    const rt = iv.round_trip;
    if (rt && rt.rtt_ms && !this.replies) this.chart.push('mean RTT', iv.end_s, rt.rtt_ms.avg);
  }

  reply(r) {
    this.replies = true;
    if (r.rtt_ms !== null && r.rtt_ms !== undefined) this.chart.push('RTT', r.sent_s, r.rtt_ms);
  }

  end(state, html) {
    this.el.dataset.state = state;
    this.el.querySelector('button.stop').hidden = true;
    this.el.querySelector('.run-state').innerHTML = html;
  }

  destroy() {
    this.chart.destroy();
  }
}

function startForm() {
  const form = document.createElement('form');
  form.className = 'start-test';
  form.innerHTML = `<h2>Start a test</h2>
    <label>test <select name="test"><option>tcp</option><option>udp</option><option>ping</option></select></label>
    <label>host <input name="host" value="::1" size="18" required></label>
    <label>port <input name="port" type="number" min="1" max="65535" value="5201"></label>
    <label>seconds <input name="time_s" type="number" min="1" max="3600" value="10"></label>
    <label>direction <select name="direction"><option>forward</option><option>reverse</option></select></label>
    <label>UDP rate (bit/s) <input name="bitrate_bps" value="1M" size="6"></label>
    <label>pings <input name="count" type="number" min="1" value="10"></label>
    <button type="submit">start</button> <span class="start-answer"></span>`;
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const f = new FormData(form);
    const test = f.get('test');
    const spec = { test, host: f.get('host') };
    if (test === 'ping') {
      spec.count = Number(f.get('count'));
    } else {
      spec.port = Number(f.get('port'));
      spec.time_s = Number(f.get('time_s'));
      spec.direction = f.get('direction');
      if (test === 'udp') spec.bitrate_bps = f.get('bitrate_bps');
    }
    const out = form.querySelector('.start-answer');
    out.className = 'start-answer';
    out.textContent = 'starting…';
    try {
      const r = await post('tests', spec);
      out.textContent = `started: run ${r.run_id}`;
      out.dataset.run = r.run_id;
    } catch (err) {
      out.className = 'start-answer error';
      out.textContent = err instanceof ApiError ? err.explain() : String(err);
    }
  });
  return form;
}

export async function render(app, params, ctx) {
  app.innerHTML = `<h1>Live</h1><p class="stream-state">connecting…</p><p class="empty none-running">No test is running now; one started here or by a campaign shows up as it begins.</p><div class="runs-live"></div>`;
  app.querySelector('h1').after(startForm());
  const host = app.querySelector('.runs-live');
  const state = app.querySelector('.stream-state');
  const cards = new Map();
  ctx.onCleanup(() => cards.forEach((c) => c.destroy()));
  const card = (run) => {
    if (!cards.has(run.run_id)) {
      cards.set(run.run_id, new RunCard(host, run));
      app.querySelector('.none-running').hidden = true;
    }
    return cards.get(run.run_id);
  };
  // Events that come before the list of running tests wait for it.
  let pending = [];
  const apply = (kind, d) => {
    if (kind === 'started') card(d);
    else if (kind === 'interval') card({ run_id: d.run_id }).interval(d.interval);
    else if (kind === 'reply') card({ run_id: d.run_id }).reply(d.reply);
    else if (kind === 'finished') {
      const c = card({ run_id: d.run_id });
      const spec = c.run.spec || {};
      const href = spec.host ? `#/path?test=${encodeURIComponent(spec.test)}&target=${encodeURIComponent(spec.host)}` : '#/';
      c.end('finished', `finished: result <a href="${href}"><code>${esc(d.result_id)}</code></a>`);
    } else if (kind === 'failed') card({ run_id: d.run_id }).end('failed', `failed: ${esc(d.reason)}`);
  };
  const onEvent = (kind, d) => (pending ? pending.push([kind, d]) : apply(kind, d));
  const onState = (s) => {
    state.className = 'stream-state';
    if (s === 'open') state.textContent = 'receiving live events';
    else if (s === 'closed') state.textContent = 'the event stream ended; reconnecting…';
    else {
      state.className = 'stream-state error';
      state.textContent = s.explain();
    }
  };
  events(onEvent, onState, ctx.signal);
  const running = await get('live', {}, ctx.signal);
  for (const run of running) {
    const c = card(run);
    for (const iv of run.intervals || []) c.interval(iv);
  }
  for (const [kind, d] of pending) apply(kind, d);
  pending = null;
}
