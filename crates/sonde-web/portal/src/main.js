// The portal's shell: hash routes (#/page?key=value, so the agent only
// serves index.html and its assets), the token form, the agent's name,
// and each page's life: drawn into <main>, its charts and streams ended
// when the user leaves it. body[data-state] is loading, ready or error
// (the tests and bench/portal wait on it).

import './style.css';
import { get, setToken, token, ApiError } from './api.js';
import { esc, useRegistry } from './format.js';
import * as overview from './pages/overview.js';
import * as path from './pages/path.js';
import * as live from './pages/live.js';
import * as heatmap from './pages/heatmap.js';
import * as mesh from './pages/mesh.js';
import * as load from './pages/load.js';
import * as campaigns from './pages/campaigns.js';
import * as campaign from './pages/campaign.js';
import * as incidents from './pages/incidents.js';
import * as incident from './pages/incident.js';
import * as readings from './pages/readings.js';
import * as results from './pages/results.js';
import * as result from './pages/result.js';

const PAGES = { '': overview, path, results, result, live, heatmap, mesh, load, campaigns, campaign, incidents, incident, readings };

/** The nav entry a detail page belongs to. */
const NAV_OF = { campaign: 'campaigns', incident: 'incidents', result: 'results' };

const app = document.getElementById('app');
const notice = document.getElementById('notice');
let current = null;

/** `#/campaign/geant?x=1` → { page: 'campaign', rest: ['geant'], params }. */
function parseHash() {
  const hash = location.hash.replace(/^#\/?/, '');
  const [p, q = ''] = hash.split('?');
  const parts = p.split('/').filter(Boolean).map(decodeURIComponent);
  return { page: parts[0] || '', rest: parts.slice(1), params: new URLSearchParams(q) };
}

export function showNotice(text, kind = 'error') {
  notice.hidden = !text;
  notice.className = `notice ${kind}`;
  notice.textContent = text || '';
}

async function route() {
  if (current) {
    current.abort();
    for (const f of current.cleanups) f();
  }
  const { page, rest, params } = parseHash();
  const module = PAGES[page];
  const ctrl = new AbortController();
  const ctx = { signal: ctrl.signal, cleanups: [], abort: () => ctrl.abort() };
  ctx.onCleanup = (f) => ctx.cleanups.push(f);
  current = ctx;
  showNotice('');
  app.replaceChildren();
  document.body.dataset.state = 'loading';
  delete document.body.dataset.error;
  document.body.dataset.page = page || 'overview';
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('here', a.getAttribute('href').replace('#/', '') === (NAV_OF[page] || page));
  }
  if (!module) {
    app.innerHTML = `<p>No page "${esc(page)}". <a href="#/">Overview</a></p>`;
    document.body.dataset.state = 'error';
    return;
  }
  try {
    await module.render(app, params, ctx, rest);
    if (current !== ctx) return;
    // Status pages redraw themselves while open (a wall screen stays
    // current); a failed refresh keeps what is shown.
    if (module.REFRESH_S) {
      const timer = setInterval(() => {
        module.render(app, params, ctx, rest).catch(() => {});
      }, module.REFRESH_S * 1000);
      ctx.onCleanup(() => clearInterval(timer));
    }
    requestAnimationFrame(() => {
      if (current !== ctx) return;
      document.body.dataset.state = 'ready';
      // ms from navigation start to drawn (bench/portal reads it).
      document.body.dataset.readyMs = performance.now().toFixed(1);
    });
  } catch (e) {
    if (e.name === 'AbortError' || current !== ctx) return;
    showNotice(e instanceof ApiError ? e.explain() : String(e));
    document.body.dataset.state = 'error';
    document.body.dataset.error = e instanceof ApiError ? String(e.status) : 'script';
  }
}

function tokenForm() {
  const form = document.getElementById('token-form');
  const input = document.getElementById('token-input');
  document.getElementById('token-button').addEventListener('click', () => {
    form.hidden = !form.hidden;
    input.value = token();
    if (!form.hidden) input.focus();
  });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    setToken(input.value.trim());
    form.hidden = true;
    marked();
    route();
  });
  document.getElementById('token-forget').addEventListener('click', () => {
    setToken('');
    input.value = '';
    form.hidden = true;
    marked();
    route();
  });
  const marked = () => document.getElementById('token-button').classList.toggle('set', Boolean(token()));
  marked();
}

async function agent() {
  try {
    const info = await get('info');
    useRegistry(info.metrics);
    document.getElementById('agent').textContent = [info.hostname, `sonde ${info.sonde_version}`].filter(Boolean).join(' · ');
    if (info.hostname) document.title = `sonde · ${info.hostname}`;
  } catch {
    // The page itself says what is wrong.
  }
}

tokenForm();
window.addEventListener('hashchange', route);
// The first page is drawn once the agent has said what it is and which
// metrics it knows (or could not say).
agent().then(route);
