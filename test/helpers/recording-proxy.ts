// A loopback HTTP proxy in front of the service that keeps every request it forwards, whole body
// included: what a browser really sent. The DevTools protocol cannot tell that (a request's post
// data leaves out the bytes of uploaded files), and a school's files are told apart by their
// bytes, not their names.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  readonly method: string;
  /** Path and query string. */
  readonly path: string;
  readonly headers: http.IncomingHttpHeaders;
  /** The whole body once it has arrived; empty until then. */
  body: Buffer;
}

export interface RecordingProxy {
  readonly url: string;
  /** Every request in the order it arrived. */
  readonly requests: RecordedRequest[];
  close(): Promise<void>;
}

export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const upstream = new URL(target);
  const requests: RecordedRequest[] = [];
  const server = http.createServer((req, res) => {
    const recorded: RecordedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.alloc(0) };
    requests.push(recorded);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      recorded.body = Buffer.concat(chunks);
      const forward = http.request(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      forward.on('error', () => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
        res.end('{"erro":"proxy de teste: o serviço não respondeu."}');
      });
      forward.end(recorded.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}
