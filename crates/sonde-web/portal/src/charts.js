// The report crate's chart model (panels of named series of [x, y]
// points; docs/api.md) drawn with uPlot: one uPlot per panel, with
// zoom (drag across), reset (double-click) and hover values. Panels of
// one chart share the cursor and the x zoom, so link load and RTT stay
// over the same time. Each panel's figure says how many points it drew
// (data-points) and the x range shown (data-x), which the browser tests
// compare with the API.

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { axisFormatter, esc } from './format.js';

// Okabe–Ito: told apart with any colour vision.
const PALETTE = ['#0072b2', '#e69f00', '#009e73', '#cc79a7', '#56b4e9', '#d55e00', '#000000'];

let chartCount = 0;

/** The width inside an element's padding (uPlot's canvas fills it). */
function inner(el) {
  // A chart taken down before a queued resize ran has no parent left.
  if (!(el instanceof Element)) return 0;
  const st = getComputedStyle(el);
  return el.clientWidth - parseFloat(st.paddingLeft) - parseFloat(st.paddingRight);
}

/** Points of one series, sorted by x, as two arrays. */
function columns(points) {
  const sorted = [...points].sort((a, b) => a[0] - b[0]);
  return [sorted.map((p) => p[0]), sorted.map((p) => p[1])];
}

/** uPlot's aligned data for a panel: one x array, a y array per series
 * (null where that series has no point at that x). */
export function aligned(panel) {
  if (panel.series.length === 0) return [[]];
  if (panel.series.length === 1) return columns(panel.series[0].points);
  return uPlot.join(panel.series.map((s) => columns(s.points)));
}

/** How many points each series of `u` holds, and its highest. */
function counts(u) {
  return u.series.slice(1).map((s, i) => {
    const ys = u.data[i + 1].filter((v) => v !== null && v !== undefined);
    return { name: s.label, points: ys.length, max: ys.length ? Math.max(...ys) : null };
  });
}

const iso = (ts) => new Date(ts * 1000).toISOString();

/** Time ticks in UTC, 24-hour: the date where the day changes. */
function timeTicks(u, splits, axis, space, incr) {
  let day = '';
  return splits.map((ts) => {
    const t = iso(ts);
    if (incr >= 86400) return t.slice(5, 10);
    const clock = incr >= 60 ? t.slice(11, 16) : t.slice(11, 19);
    const d = t.slice(5, 10);
    const label = d !== day ? `${clock}\n${d}` : clock;
    day = d;
    return label;
  });
}

/** Draws `chart` (the model) into `host`; x is unix seconds when
 * `time`, shown over `xRange` ([since, until]) when given; `onZoom(min,
 * max)` hears the user zoom. Returns the uPlot instances; `destroy`
 * them to free. */
export function drawChart(host, chart, { time = true, height, xRange, onZoom } = {}) {
  const key = `chart${++chartCount}`;
  const sync = uPlot.sync(key);
  const plots = [];
  const grid = document.createElement('div');
  grid.className = 'chart';
  grid.style.gridTemplateColumns = `repeat(${Math.max(1, Math.min(chart.columns || 1, chart.panels.length))}, 1fr)`;
  host.append(grid);
  let syncing = false;
  // Zooms by the user (not the first drawing) are told to onZoom.
  let drawn = false;
  for (const panel of chart.panels) {
    const fig = document.createElement('figure');
    fig.className = 'panel';
    grid.append(fig);
    const data = aligned(panel);
    const points = panel.series.reduce((n, s) => n + s.points.length, 0);
    if (points === 0) {
      fig.innerHTML = `<figcaption>${esc(panel.title)}</figcaption><p class="empty">nothing archived in this range</p>`;
      fig.dataset.points = '[]';
      continue;
    }
    const fmt = axisFormatter(panel.y_label);
    const many = data[0].length > 120;
    const opts = {
      title: panel.title,
      width: Math.max(300, inner(fig) || host.clientWidth || 600),
      height: height || Math.min(panel.panel_height || 300, 340),
      cursor: { sync: { key: sync.key }, drag: { x: true, y: false } },
      scales: {
        x: { time },
        y: panel.y_range ? { range: () => panel.y_range } : { range: (u, lo, hi) => [Math.min(0, lo), hi > 0 ? hi * 1.05 : 1] },
      },
      axes: [
        { label: panel.x_label, size: 56, space: time ? 100 : 50, values: time ? timeTicks : (u, vs) => vs.map(axisFormatter(panel.x_label)) },
        { label: panel.y_label, size: 70, values: (u, vs) => vs.map(fmt) },
      ],
      series: [
        {
          label: time ? 'time (UTC)' : panel.x_label,
          value: (u, v) => (v === null ? '–' : time ? iso(v).slice(0, 19).replace('T', ' ') : axisFormatter(panel.x_label)(v)),
        },
        ...panel.series.map((s, i) => ({
          label: s.name,
          stroke: PALETTE[i % PALETTE.length],
          width: 1.5,
          spanGaps: true,
          points: { show: !many, size: 5 },
          value: (u, v) => (v === null ? '–' : fmt(v)),
        })),
      ],
      hooks: {
        setScale: [
          (u, scale) => {
            if (scale !== 'x') return;
            // What x range is shown (the tests read it).
            fig.dataset.x = JSON.stringify([u.scales.x.min, u.scales.x.max]);
            if (syncing) return;
            if (drawn && onZoom) onZoom(u.scales.x.min, u.scales.x.max);
            syncing = true;
            const { min, max } = u.scales.x;
            for (const other of plots) if (other !== u) other.setScale('x', { min, max });
            syncing = false;
          },
        ],
      },
    };
    const u = new uPlot(opts, data, fig);
    if (xRange) u.setScale('x', { min: xRange[0], max: xRange[1] });
    fig.dataset.points = JSON.stringify(counts(u));
    plots.push(u);
  }
  drawn = true;
  let destroyed = false;
  const resize = () => {
    if (destroyed) return;
    for (const u of plots) {
      const w = inner(u.root.parentElement);
      if (w > 0) u.setSize({ width: w, height: u.height });
    }
  };
  const observer = new ResizeObserver(() => requestAnimationFrame(resize));
  observer.observe(grid);
  return {
    plots,
    destroy() {
      destroyed = true;
      observer.disconnect();
      for (const u of plots) u.destroy();
      grid.remove();
    },
  };
}

/** A live line chart (seconds since a test began → values) that grows as
 * points arrive: `push(seriesName, x, y)`. */
export function liveChart(host, { title, xLabel, yLabel, xMax = 0 }) {
  const fig = document.createElement('figure');
  fig.className = 'panel';
  host.append(fig);
  const names = [];
  const rows = new Map();
  const fmt = axisFormatter(yLabel);
  const make = () => new uPlot(
    {
      title,
      width: Math.max(300, inner(fig) || 600),
      height: 240,
      scales: {
        x: { time: false, range: (u, lo, hi) => [0, Math.max(hi, xMax)] },
        y: { range: (u, lo, hi) => [0, hi > 0 ? hi * 1.1 : 1] },
      },
      axes: [{ label: xLabel }, { label: yLabel, size: 70, values: (u, vs) => vs.map(fmt) }],
      series: [
        { label: xLabel },
        ...names.map((n, i) => ({ label: n, stroke: PALETTE[i % PALETTE.length], width: 1.5, spanGaps: true, value: (u, v) => (v === null ? '–' : fmt(v)) })),
      ],
    },
    data(),
    fig,
  );
  const data = () => {
    const xs = [...rows.keys()].sort((a, b) => a - b);
    return [xs, ...names.map((n) => xs.map((x) => rows.get(x)[n] ?? null))];
  };
  let u = null;
  let count = 0;
  return {
    fig,
    /** Adds (or, at an x already there, replaces) a point. */
    push(name, x, y) {
      if (!rows.has(x)) rows.set(x, {});
      if (!(name in rows.get(x))) count += 1;
      rows.get(x)[name] = y;
      fig.dataset.points = String(count);
      if (!names.includes(name)) {
        names.push(name);
        if (u) u.destroy();
        u = make();
      } else {
        u.setData(data());
      }
    },
    destroy() {
      if (u) u.destroy();
      fig.remove();
    },
  };
}
