// Numbers and times as the user reads them: SI prefixes for rates,
// units from the metric's name, UTC times.

/** The metrics the chart API knows, with their label, unit and which
 * way is worse: the agent's metric registry (`/api/v1/info`'s `metrics`,
 * as `/api/v1/metrics` serves it, read by `useRegistry` as the portal
 * starts), these until it has answered (or when reading it needs a
 * token not given yet). */
export const METRICS = {
  throughput_bps: { label: 'throughput', unit: 'Mbit/s', worse: 'lower' },
  loss_pct: { label: 'loss', unit: '%', worse: 'higher' },
  pdr_pct: { label: 'PDR', unit: '%', worse: 'lower' },
  jitter_ms: { label: 'jitter', unit: 'ms', worse: 'higher' },
  rtt_p50_ms: { label: 'RTT', unit: 'ms', worse: 'higher' },
};

/** Other names of the metrics (the RTT median's `rtt_ms`), to theirs. */
const ALIASES = { rtt_ms: 'rtt_p50_ms' };

/** Takes the agent's registry (`info.metrics`) as the metrics known. */
export function useRegistry(list) {
  if (!Array.isArray(list) || list.length === 0) return;
  for (const k of Object.keys(METRICS)) delete METRICS[k];
  for (const k of Object.keys(ALIASES)) delete ALIASES[k];
  for (const m of list) {
    METRICS[m.name] = { label: m.label, unit: m.unit, worse: m.worse };
    for (const a of m.aliases || []) ALIASES[a] = m.name;
  }
}

/** The registry's name of the metric named `name` (its name or an
 * alias, as links and pages may write it), or null. */
export function metricOf(name) {
  if (name && METRICS[name]) return name;
  const to = name ? ALIASES[name] : undefined;
  return to && METRICS[to] ? to : null;
}

/** The metric a test is mostly read by. */
export function mainMetric(test) {
  return { tcp: 'throughput_bps', udp: 'loss_pct', ping: 'rtt_p50_ms' }[test] || 'throughput_bps';
}

const PREFIXES = [
  [1e12, 'T'],
  [1e9, 'G'],
  [1e6, 'M'],
  [1e3, 'k'],
];

/** 9400000 → "9.40 M" (append the unit). */
export function si(v, digits = 3) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  const a = Math.abs(v);
  for (const [f, p] of PREFIXES) {
    if (a >= f) return `${(v / f).toPrecision(digits)} ${p}`;
  }
  return `${Number(v.toPrecision(digits))} `;
}

/** A value of `metric` with its unit. */
export function metricValue(metric, v) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  if (metric === 'throughput_bps') return `${si(v)}bit/s`;
  const unit = (METRICS[metricOf(metric)] || {}).unit || '';
  const digits = Math.abs(v) >= 100 ? 1 : Math.abs(v) >= 1 ? 2 : 3;
  return `${v.toFixed(digits)}${unit === '%' ? ' %' : ` ${unit}`}`;
}

/** A formatter for values on an axis labelled `label`: SI prefixes for
 * bare bit/s ("throughput (bit/s)"), plain numbers otherwise (the unit
 * is in the label: "throughput (Mbit/s)"). */
export function axisFormatter(label) {
  if (/\(bit\/s\)/.test(label || '')) return (v) => (v === null ? '' : `${si(v, 3)}b/s`.replace(' ', ''));
  return (v) => (v === null ? '' : String(Number(v.toPrecision(4))));
}

/** "throughput (Mbit/s)" → "Mbit/s". */
export function unitOf(label) {
  const m = /\(([^)]*)\)\s*$/.exec(label || '');
  return m ? m[1] : '';
}

/** ns since the epoch → "2026-11-25 19:33:07 UTC". */
export function utc(ns) {
  if (ns === null || ns === undefined) return '–';
  const d = new Date(Number(ns) / 1e6);
  return `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** ns since the epoch → "5 min ago" (now from `nowMs`). */
export function ago(ns, nowMs = Date.now()) {
  if (ns === null || ns === undefined) return '–';
  const s = Math.round((nowMs - Number(ns) / 1e6) / 1000);
  if (s < 0) return `in ${until(-s)}`;
  return `${until(s)} ago`;
}

function until(s) {
  if (s < 90) return `${s} s`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min`;
  if (s < 36 * 3600) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

/** Escapes text for HTML. */
export function esc(s) {
  return String(s ?? '').replace(/[&<>"']/g, (c) => ({
    '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;',
  })[c]);
}
