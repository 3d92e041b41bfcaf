// Path status: ok, warn, crit, unknown, each with a symbol as well as
// its colour, so no one has to tell red from green. The colours are
// defined once, in style.css (--ok, --warn, --crit, --unknown, used by
// the status-* classes): a bluish green, a light amber and a dark red,
// which differ in lightness as well as hue and so survive red–green
// colour blindness.

export const STATUS = {
  ok: { symbol: '✓', label: 'ok' },
  warn: { symbol: '!', label: 'warn' },
  crit: { symbol: '✕', label: 'crit' },
  unknown: { symbol: '?', label: 'unknown' },
};

/** Worst first. */
export const SEVERITY = ['crit', 'warn', 'unknown', 'ok'];

export function statusOf(s) {
  return STATUS[s] || STATUS.unknown;
}

/** A coloured badge: symbol and word. */
export function badge(s) {
  const st = statusOf(s);
  const name = STATUS[s] ? s : 'unknown';
  return `<span class="badge status-${name}" data-status="${name}">${st.symbol} ${st.label}</span>`;
}

/** The legend of the four colours. */
export function legend() {
  return `<div class="legend">${Object.keys(STATUS).map(badge).join(' ')}</div>`;
}
