// The app's one way to the service: same-origin fetch with the session cookie, JSON in and out,
// and every failure turned into a sentence a person can act on.

/** A failed request: `message` is for people, `code` and `status` for the code. */
export class ApiError extends Error {
  /** @param {string} message @param {string} code @param {number} status @param {unknown} [details] */
  constructor(message, code, status, details) {
    super(message);
    this.code = code;
    this.status = status;
    this.details = details;
  }
}

/** What to tell a person about a failure. @param {unknown} err */
export const messageOf = (err) => (err instanceof Error ? err.message : String(err));

const UNREACHABLE = 'The service cannot be reached. Check your connection and try again.';

/** @param {number} bytes */
export function formatBytes(bytes) {
  if (!Number.isFinite(bytes)) return '';
  if (bytes < 1000) return `${bytes} B`;
  const units = ['kB', 'MB', 'GB', 'TB', 'PB'];
  let value = bytes / 1000;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}

/** What went wrong, in a person's words. @param {number} status @param {any} body */
export function humanMessage(status, body) {
  const code = body?.error?.code;
  switch (code) {
    case 'NAME_CONFLICT':
      return 'That name is already taken here. Choose another name.';
    case 'QUOTA_EXCEEDED':
      return 'Your storage is full. Delete files or empty the trash, then try again.';
    case 'FILE_TOO_LARGE':
      return 'That file is larger than this service accepts.';
    case 'RATE_LIMITED':
      return 'Too many attempts. Wait a minute, then try again.';
    case 'UNAUTHORIZED':
      return 'Your session has ended. Sign in again.';
    case 'FORBIDDEN':
      return 'You are not allowed to do that.';
    case 'NOT_FOUND':
      return 'It is not there any more: it may have been moved or deleted elsewhere.';
    case 'PRECONDITION_FAILED':
      return 'It changed in the meantime. Reload and try again.';
    case 'SERVICE_UNAVAILABLE':
      return 'The service is busy or under maintenance. Try again in a moment.';
    case 'INVALID_REQUEST':
      return invalidMessage(body?.error?.message);
    default:
      return status >= 500 ? 'Something went wrong on the service. Try again in a moment.' : 'That did not work. Try again.';
  }
}

/** @param {string | undefined} message */
function invalidMessage(message) {
  if (message && /name/i.test(message)) return 'That name cannot be used: names may not contain "/" or control characters, nor be "." or "..".';
  if (message && /password/i.test(message)) return 'Passwords must be 8 to 1024 characters long.';
  if (message && /into itself|descendant/i.test(message)) return 'A folder cannot be moved into itself.';
  return 'That request was not accepted. Check what you entered and try again.';
}

/** Called when a request finds the session gone. @type {() => void} */
let onSignedOut = () => undefined;
/** @param {() => void} handler */
export function whenSignedOut(handler) {
  onSignedOut = handler;
}

/**
 * @param {string} method @param {string} path
 * @param {{ json?: unknown, body?: BodyInit, signal?: AbortSignal, quiet401?: boolean }} [init]
 */
export async function request(method, path, init = {}) {
  /** @type {Record<string, string>} */
  const headers = { accept: 'application/json' };
  let body = init.body;
  if (init.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(init.json);
  }
  let res;
  try {
    res = await fetch(path, { method, headers, body, credentials: 'same-origin', signal: init.signal });
  } catch (err) {
    if (err instanceof DOMException && err.name === 'AbortError') throw err;
    throw new ApiError(UNREACHABLE, 'NETWORK', 0);
  }
  const text = await res.text();
  let parsed = null;
  if (text && (res.headers.get('content-type') ?? '').includes('json')) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = null;
    }
  }
  if (!res.ok) {
    if (res.status === 401 && !init.quiet401) onSignedOut();
    throw new ApiError(humanMessage(res.status, parsed), parsed?.error?.code ?? 'HTTP', res.status, parsed?.error?.details);
  }
  return parsed;
}

export const api = {
  /** @param {string} path @param {{ signal?: AbortSignal, quiet401?: boolean }} [init] */
  get: (path, init) => request('GET', path, init),
  /** @param {string} path @param {unknown} [json] */
  post: (path, json) => request('POST', path, { json }),
  /** @param {string} path @param {unknown} [json] */
  patch: (path, json) => request('PATCH', path, { json }),
  /** @param {string} path */
  del: (path) => request('DELETE', path),
};

/** A new resource id: 32 lowercase hex characters from the browser's CSPRNG. */
export function newId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

let opCounter = 0;
/** Op ids unique for this browser's device: milliseconds times 1024 plus a counter, as a decimal string. */
function nextOpId() {
  opCounter = (opCounter + 1) % 1024;
  return String(BigInt(Date.now()) * 1024n + BigInt(opCounter));
}

/**
 * Sends sync ops in batches of at most 1000; throws the first failure in a person's words.
 * @param {Array<{ type: string, resourceId: string, payload?: unknown }>} ops
 */
export async function syncOps(ops) {
  for (let i = 0; i < ops.length; i += 1000) {
    const batch = ops.slice(i, i + 1000).map((op) => ({ opId: nextOpId(), ...op }));
    const result = await api.post('/v1/sync/ops', { ops: batch });
    if (result?.failed) {
      const code = result.failed.error?.code;
      throw new ApiError(humanMessage(400, { error: { code, message: result.failed.error?.message } }), code, 400);
    }
  }
}
