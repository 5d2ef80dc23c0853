import * as http from 'node:http';

export interface Reply {
  readonly status: number;
  readonly body: any;
}

/**
 * A small JSON client; no pool limit (500 requests at once are 500 connections). A connection per
 * request: reusing kept-alive sockets races with the server closing idle ones ("socket hang up").
 */
export class HttpClient {
  private readonly agent = new http.Agent({ keepAlive: false });

  request(method: 'GET' | 'POST', url: string, body?: unknown, timeoutMs = 30_000): Promise<Reply> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = http.request(
        url,
        {
          method,
          agent: this.agent,
          timeout: timeoutMs,
          headers: payload
            ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
            : {},
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown = text;
            try {
              parsed = text ? JSON.parse(text) : undefined;
            } catch {
              // not JSON: keep the text
            }
            resolve({ status: res.statusCode ?? 0, body: parsed });
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`no answer from ${url} within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  post(url: string, body?: unknown): Promise<Reply> {
    return this.request('POST', url, body);
  }

  get(url: string): Promise<Reply> {
    return this.request('GET', url);
  }

  /** Closes any socket still open. */
  close(): void {
    this.agent.destroy();
  }
}
