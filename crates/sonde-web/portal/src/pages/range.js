// The time range of a page: 1 h, 1 day, 1 week back from now, or a
// chosen one (UTC), read from and written to the page's hash.

export const RANGES = { '1h': 3600, '1d': 86400, '1w': 7 * 86400 };

/** Longer ones, for day heat maps. */
export const DAYS = { '1w': 7 * 86400, '30d': 30 * 86400, '1y': 365 * 86400 };

/** { since, until } in unix seconds from the hash's range/since/until. */
export function rangeOf(params, fallback = '1d', ranges = RANGES) {
  const r = params.get('range') || fallback;
  if (r === 'custom') {
    const since = Number(params.get('since'));
    const until = Number(params.get('until'));
    if (Number.isFinite(since) && Number.isFinite(until) && since < until) return { range: r, since, until };
  }
  const span = ranges[r] || ranges[fallback];
  const until = Math.ceil(Date.now() / 1000);
  return { range: ranges[r] ? r : fallback, since: until - span, until };
}

function local(s) {
  return new Date(s * 1000).toISOString().slice(0, 16);
}

/** The range picker: buttons and a chosen from/to (UTC); `go(params)`
 * moves to the new hash. */
export function rangeControls(params, current, go, ranges = RANGES) {
  const box = document.createElement('div');
  box.className = 'range';
  box.innerHTML = `${Object.keys(ranges).map((r) => `<button type="button" data-range="${r}" class="${current.range === r ? 'here' : ''}">${r}</button>`).join('')}
    <label>from <input type="datetime-local" name="since" value="${local(current.since)}"></label>
    <label>to <input type="datetime-local" name="until" value="${local(current.until)}"></label> UTC
    <button type="button" data-range="custom" class="${current.range === 'custom' ? 'here' : ''}">show</button>`;
  box.addEventListener('click', (e) => {
    const b = e.target.closest('button');
    if (!b) return;
    const next = new URLSearchParams(params);
    next.set('range', b.dataset.range);
    if (b.dataset.range === 'custom') {
      const s = Date.parse(`${box.querySelector('[name=since]').value}Z`) / 1000;
      const u = Date.parse(`${box.querySelector('[name=until]').value}Z`) / 1000;
      if (!(s < u)) return;
      next.set('since', String(Math.floor(s)));
      next.set('until', String(Math.ceil(u)));
    } else {
      next.delete('since');
      next.delete('until');
    }
    go(next);
  });
  return box;
}
