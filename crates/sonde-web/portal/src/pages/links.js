// Links between pages: a path's page from its identity.

import { mainMetric } from '../format.js';

/** `#/path?...` for a path of the overview (or any subset of its keys). */
export function pathHref(p, metric) {
  const q = new URLSearchParams();
  for (const k of ['test', 'source', 'target', 'direction', 'family', 'campaign']) {
    if (p[k] !== null && p[k] !== undefined && p[k] !== '') q.set(k, p[k]);
  }
  // A ping's round trips are archived without a direction.
  if (q.get('direction') === 'round_trip') q.delete('direction');
  q.set('metric', metric || mainMetric(p.test));
  return `#/path?${q}`;
}
