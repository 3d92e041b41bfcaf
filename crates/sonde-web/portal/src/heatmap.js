// The report crate's HeatMap model (hour of day × day, a value per cell
// or null) drawn on a canvas with the reports' colour ramp (viridis-like,
// dark blue to yellow), a scale bar and the cell under the pointer
// named. The figure says how many cells hold a value (data-cells) and
// where they are drawn (data-geometry, data-first).

import { esc } from './format.js';

const STOPS = [
  [0.0, [68, 1, 84]],
  [0.25, [59, 82, 139]],
  [0.5, [33, 145, 140]],
  [0.75, [94, 201, 98]],
  [1.0, [253, 231, 37]],
];

/** The reports' ramp (sonde-report heatmap::ramp): t in 0…1 → rgb(). */
export function ramp(t) {
  const c = Number.isFinite(t) ? Math.min(1, Math.max(0, t)) : 0;
  let i = 0;
  while (i < 3 && STOPS[i + 1][0] <= c) i += 1;
  const [t0, c0] = STOPS[i];
  const [t1, c1] = STOPS[i + 1];
  const f = (c - t0) / (t1 - t0);
  const mix = c0.map((a, k) => Math.round(a + (c1[k] - a) * f));
  return `rgb(${mix.join(',')})`;
}

function range(map) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const row of map.cells) {
    for (const v of row) {
      if (v !== null && Number.isFinite(v)) {
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
    }
  }
  return Number.isFinite(lo) ? [lo, hi] : null;
}

/** Draws `map` into `host`; a click on a measured cell calls
 * `onCell(dayName, hourName)`. */
export function drawHeatMap(host, map, format = (v) => String(Number(v.toPrecision(4))), onCell = null) {
  const fig = document.createElement('figure');
  fig.className = 'heatmap';
  host.append(fig);
  const filled = map.cells.flat().filter((v) => v !== null).length;
  fig.dataset.cells = String(filled);
  fig.dataset.days = String(map.x_names.length);
  fig.innerHTML = `<figcaption>${esc(map.title)}</figcaption>`;
  const lim = range(map);
  if (!lim) {
    fig.insertAdjacentHTML('beforeend', '<p class="empty">nothing archived in this range</p>');
    return fig;
  }
  const cols = map.x_names.length;
  const rows = map.y_names.length;
  const left = 40;
  const bottom = 60;
  const avail = Math.max(300, (host.clientWidth || 900) - left - 20);
  const cw = Math.max(2, Math.min(40, Math.floor(avail / cols)));
  const ch = 14;
  const canvas = document.createElement('canvas');
  const w = left + cw * cols + 10;
  const h = ch * rows + bottom;
  const dpr = window.devicePixelRatio || 1;
  canvas.width = w * dpr;
  canvas.height = h * dpr;
  canvas.style.width = `${w}px`;
  canvas.style.height = `${h}px`;
  fig.append(canvas);
  // Where the cells are, and the first measured one (the tests click it).
  fig.dataset.geometry = JSON.stringify({ left, cw, ch });
  const firstRow = map.cells.findIndex((row) => row.some((v) => v !== null));
  if (firstRow >= 0) fig.dataset.first = JSON.stringify([map.cells[firstRow].findIndex((v) => v !== null), firstRow]);
  const ctx = canvas.getContext('2d');
  ctx.scale(dpr, dpr);
  const [lo, hi] = lim;
  const span = hi - lo || 1;
  ctx.font = '11px sans-serif';
  ctx.fillStyle = '#333';
  ctx.textBaseline = 'middle';
  map.y_names.forEach((name, y) => {
    if (y % 3 === 0) ctx.fillText(name, 8, y * ch + ch / 2);
  });
  for (let y = 0; y < rows; y += 1) {
    for (let x = 0; x < cols; x += 1) {
      const v = map.cells[y][x];
      ctx.fillStyle = v === null ? '#f2f2f2' : ramp((v - lo) / span);
      ctx.fillRect(left + x * cw, y * ch, Math.max(1, cw - (cw > 4 ? 1 : 0)), ch - 1);
    }
  }
  // Day names, as many as fit without overlap.
  const every = Math.max(1, Math.ceil(70 / cw));
  ctx.fillStyle = '#333';
  ctx.textBaseline = 'top';
  for (let x = 0; x < cols; x += every) {
    ctx.save();
    ctx.translate(left + x * cw + 2, rows * ch + 4);
    ctx.rotate(Math.PI / 6);
    ctx.fillText(map.x_names[x], 0, 0);
    ctx.restore();
  }
  const axis = document.createElement('div');
  axis.className = 'axis-labels';
  axis.textContent = `x: ${map.x_label} · y: ${map.y_label}`;
  fig.append(axis);
  const scale = document.createElement('div');
  scale.className = 'scale';
  const stops = [0, 0.25, 0.5, 0.75, 1].map((t) => `${ramp(t)} ${t * 100}%`).join(',');
  scale.innerHTML = `<span>${esc(format(lo))}</span><span class="bar" style="background:linear-gradient(90deg,${stops})"></span><span>${esc(format(hi))}</span> <span class="scale-label">${esc(map.scale_label)}</span>`;
  fig.append(scale);
  const tip = document.createElement('div');
  tip.className = 'tip';
  tip.hidden = true;
  fig.append(tip);
  canvas.addEventListener('mousemove', (e) => {
    const r = canvas.getBoundingClientRect();
    const x = Math.floor((e.clientX - r.left - left) / cw);
    const y = Math.floor((e.clientY - r.top) / ch);
    if (x < 0 || x >= cols || y < 0 || y >= rows) {
      tip.hidden = true;
      return;
    }
    const v = map.cells[y][x];
    tip.hidden = false;
    tip.textContent = `${map.x_names[x]} ${map.y_names[y]}:00 — ${v === null ? 'nothing measured' : format(v)}`;
    tip.style.left = `${e.clientX - r.left + 12}px`;
    tip.style.top = `${e.clientY - r.top + 12}px`;
  });
  canvas.addEventListener('mouseleave', () => {
    tip.hidden = true;
  });
  if (onCell) {
    canvas.style.cursor = 'pointer';
    canvas.addEventListener('click', (e) => {
      const r = canvas.getBoundingClientRect();
      const x = Math.floor((e.clientX - r.left - left) / cw);
      const y = Math.floor((e.clientY - r.top) / ch);
      if (x >= 0 && x < cols && y >= 0 && y < rows && map.cells[y][x] !== null) onCell(map.x_names[x], map.y_names[y]);
    });
  }
  return fig;
}
