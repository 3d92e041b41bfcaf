// The agent's JSON API (docs/api.md): GET and POST with the user's bearer
// token, errors as ApiError, and the live events (Server-Sent Events)
// read over fetch, because EventSource cannot send an Authorization
// header.

const TOKEN_KEY = 'sonde.token';

export function token() {
  return localStorage.getItem(TOKEN_KEY) || '';
}

export function setToken(value) {
  if (value) localStorage.setItem(TOKEN_KEY, value);
  else localStorage.removeItem(TOKEN_KEY);
}

function headers(extra = {}) {
  const h = { Accept: 'application/json', ...extra };
  const t = token();
  if (t) h.Authorization = `Bearer ${t}`;
  return h;
}

/** An error the API answered with (`{"error": "..."}`), or a network one
 * (status 0). */
export class ApiError extends Error {
  constructor(status, message, write = false) {
    super(message);
    this.status = status;
    this.write = write;
  }

  /** What the user should read. */
  explain() {
    if (this.status === 401) {
      return this.write
        ? 'Starting tests and changing things needs a token: enter it under "token" (top right).'
        : 'This agent needs a token to read: enter it under "token" (top right).';
    }
    if (this.status === 403) {
      return 'The agent refused the token: check it under "token" (top right).';
    }
    if (this.status === 0) return `The agent cannot be reached: ${this.message}`;
    return `${this.message} (HTTP ${this.status})`;
  }
}

async function answer(res, write = false) {
  const text = await res.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!res.ok) {
    const msg = body && body.error ? body.error : text || res.statusText;
    throw new ApiError(res.status, msg, write);
  }
  return body;
}

/** GET `/api/v1/{path}` with `query` (values null or '' left out). */
export async function get(path, query = {}, signal) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== null && v !== undefined && v !== '') q.set(k, v);
  }
  const qs = q.toString();
  let res;
  try {
    res = await fetch(`/api/v1/${path}${qs ? `?${qs}` : ''}`, { headers: headers(), signal });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, e.message);
  }
  return answer(res);
}

/** POST a JSON body to `/api/v1/{path}`. */
export async function post(path, body) {
  let res;
  try {
    res = await fetch(`/api/v1/${path}`, {
      method: 'POST',
      headers: headers({ 'Content-Type': 'application/json' }),
      body: JSON.stringify(body),
    });
  } catch (e) {
    throw new ApiError(0, e.message, true);
  }
  return answer(res, true);
}

/** DELETE `/api/v1/{path}` (stop a test, retire a campaign). */
export async function del(path) {
  let res;
  try {
    res = await fetch(`/api/v1/${path}`, { method: 'DELETE', headers: headers() });
  } catch (e) {
    throw new ApiError(0, e.message, true);
  }
  return answer(res, true);
}

/** Splits a Server-Sent Events stream into `{event, data}` (data parsed as
 * JSON) and calls `onEvent` for each, until `signal` aborts; reconnects
 * after a dropped stream. `onState` hears 'open', 'closed' or an
 * ApiError. */
export async function events(onEvent, onState, signal) {
  while (!signal.aborted) {
    try {
      const res = await fetch('/api/v1/events', {
        headers: headers({ Accept: 'text/event-stream' }),
        signal,
        cache: 'no-store',
      });
      if (!res.ok) {
        await answer(res);
      }
      onState('open');
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value.replace(/\r\n?/g, '\n');
        let cut;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          dispatch(buffer.slice(0, cut), onEvent);
          buffer = buffer.slice(cut + 2);
        }
      }
      onState('closed');
    } catch (e) {
      if (signal.aborted || e.name === 'AbortError') return;
      onState(e instanceof ApiError ? e : new ApiError(0, e.message));
      if (e instanceof ApiError && (e.status === 401 || e.status === 403)) return;
    }
    await new Promise((r) => setTimeout(r, 2000));
  }
}

function dispatch(block, onEvent) {
  let event = 'message';
  const data = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  if (data.length === 0) return;
  let parsed;
  try {
    parsed = JSON.parse(data.join('\n'));
  } catch {
    return;
  }
  onEvent(event, parsed);
}
