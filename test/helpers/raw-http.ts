// Hand-written multipart over a raw HTTP request, for what fetch cannot do: hold an upload open
// half-sent, cut it, drop the connection, or send a malformed Content-Type.
import http from 'node:http';
import { API_KEY } from './http.js';

export const BOUNDARY = '----censo-raw-boundary-5b1e';

export function partHead(field: string, filename: string, boundary = BOUNDARY): Buffer {
  return Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
}

export function closing(boundary = BOUNDARY): Buffer {
  return Buffer.from(`\r\n--${boundary}--\r\n`);
}

/**
 * The head of a POST written byte by byte on a socket, as a client that sends its own request
 * does: `Connection: close`, the body's length, then `headers`.
 */
export function postHead(url: string, route: string, headers: Record<string, string>, bodyLength: number): string {
  const { host } = new URL(url);
  const lines = Object.entries({ host, 'content-length': String(bodyLength), connection: 'close', ...headers })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return `POST ${route} HTTP/1.1\r\n${lines}\r\n`;
}

export interface RawResponse {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: unknown;
}

export interface OpenUpload {
  readonly request: http.ClientRequest;
  write(chunk: Buffer | string): Promise<void>;
  /** Sends the rest and resolves with the response. */
  finish(chunk?: Buffer | string): Promise<RawResponse>;
  /** The response, whenever it comes (the server may answer before the body is complete). */
  readonly response: Promise<RawResponse>;
}

/** Starts a chunked POST and leaves it open for the test to feed. */
export function openUpload(
  url: string,
  route: string,
  headers: Record<string, string> = { 'x-api-key': API_KEY, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
): OpenUpload {
  const request = http.request(`${url}${route}`, { method: 'POST', headers: { ...headers, 'transfer-encoding': 'chunked' } });
  const response = new Promise<RawResponse>((resolve, reject) => {
    request.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.once('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? JSON.parse(text) : null });
      });
      res.once('error', reject);
    });
    request.once('error', reject);
  });
  // A response that arrives early is not an unhandled rejection if the test never awaits it.
  response.catch(() => undefined);
  request.flushHeaders();
  const write = (chunk: Buffer | string) =>
    new Promise<void>((resolve, reject) => request.write(chunk, (err) => (err ? reject(err) : resolve())));
  return {
    request,
    write,
    async finish(chunk) {
      if (chunk !== undefined) await write(chunk);
      request.end();
      return response;
    },
    response,
  };
}
