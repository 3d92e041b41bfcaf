// Path status and its colours: ok green, warn amber, crit red, unknown
// grey, each with a symbol too, so no one has to tell red from green.
// The three differ in lightness as well as hue (a bluish green, a light
// amber, a dark red), which survives red–green colour blindness.

export const STATUS = {
  ok: { colour: '#009e73', symbol: '✓', label: 'ok' },
  warn: { colour: '#f0b400', symbol: '!', label: 'warn' },
  crit: { colour: '#cc3311', symbol: '✕', label: 'crit' },
  unknown: { colour: '#a0a0a0', symbol: '?', label: 'unknown' },
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
