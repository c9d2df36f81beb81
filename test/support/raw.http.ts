import http from 'node:http';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
  /** How many body bytes were written before the response arrived. */
  sent: number;
}

/**
 * A request through node:http, for what fetch cannot do: a Content-Length that the body does not
 * honour, a chunked body of a chosen size, a body that stops halfway. Write errors after the server
 * has answered (it may close the connection early) are ignored; the response is what counts.
 */
export function rawRequest(
  baseUrl: string,
  method: string,
  path: string,
  options: { headers?: Record<string, string | number>; chunks?: Buffer[]; endBody?: boolean; abortAfterBody?: boolean },
): Promise<RawResponse> {
  const url = new URL(path, baseUrl);
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const req = http.request({ host: url.hostname, port: url.port, method, path: url.pathname + url.search, headers: options.headers, agent: false });
    req.on('error', (err) => {
      if (answered) return;
      if (options.abortAfterBody) resolve({ status: 0, headers: {}, body: undefined, sent });
      else reject(err);
    });
    req.on('response', (res) => {
      answered = true;
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        const json = String(res.headers['content-type'] ?? '').includes('json') && text ? JSON.parse(text) : text;
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: json, sent });
        // Whatever of the body is still unsent stays unsent.
        req.destroy();
      });
    });
    req.flushHeaders();
    const write = async () => {
      for (const chunk of options.chunks ?? []) {
        if (req.destroyed || answered) return;
        sent += chunk.length;
        if (!req.write(chunk)) await new Promise((r) => req.once('drain', r));
      }
      if (options.abortAfterBody) {
        // Give the server the bytes, then vanish.
        setTimeout(() => req.destroy(), 100);
        return;
      }
      if (options.endBody !== false) req.end();
    };
    write().catch(() => undefined);
  });
}
