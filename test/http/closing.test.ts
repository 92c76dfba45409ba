// A replica that is closing (SIGTERM in a rolling upgrade, a scale-down) finishes what it has. A
// keep-alive connection that carried a request in flight when the close began is the one way a
// new request still reaches it: that request is served too (the close waits for it anyway), and
// its connection then closes so the client's next request goes to another replica. Fastify's
// own answer there was a 503 with an `{"error"}` body written past every hook (SPEC §5), an error
// a client had to retry for no reason.
import net from 'node:net';
import { readFile } from 'node:fs/promises';
import { expect, it } from 'vitest';
import { fixtureCases } from '../helpers/fixtures.js';
import { API_KEY } from '../helpers/http.js';
import { BOUNDARY, closing, partHead } from '../helpers/raw-http.js';
import { useTestRedis } from '../helpers/redis.js';
import { startHarness } from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';

const redis = useTestRedis();
const basico = fixtureCases().find((c) => c.name === 'basico')!;

it('a request that arrives while the replica closes is served, and its connection then closes; the one in flight is answered whole', async () => {
  const server = await startHarness('embedded', { redisUrl: redis.url });
  const socket = net.connect(Number(new URL(server.url).port), '127.0.0.1');
  try {
    server.gate.close();
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
    const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    const body = Buffer.concat([partHead('retorno', 'retorno.json'), await readFile(basico.retorno.json), closing()]);
    socket.write(
      `POST /api/divergencias-rf HTTP/1.1\r\nhost: censo\r\nx-api-key: ${API_KEY}\r\n` +
        `content-type: multipart/form-data; boundary=${BOUNDARY}\r\ncontent-length: ${body.length}\r\n\r\n`,
    );
    socket.write(body);
    await waitFor(async () => server.gate.held === 1, { what: 'the upload to reach its job' });
    const closed = server.app.close();
    // The close has begun (preClose ran) while the upload's job is still held: a second request on the same connection.
    await new Promise((resolve) => setTimeout(resolve, 100));
    socket.write('GET /healthz HTTP/1.1\r\nhost: censo\r\n\r\n');
    await new Promise((resolve) => setTimeout(resolve, 100));
    server.gate.open();
    await closed;
    await ended;
    const [first, second] = received.split(/(?=HTTP\/1\.1 )/);
    expect(first).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(JSON.parse(first!.slice(first!.indexOf('\r\n\r\n') + 4))).toEqual(basico.expectedDivergencias);
    expect(second).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(second).toMatch(/\r\nconnection: close\r\n/i);
    expect(JSON.parse(second!.slice(second!.indexOf('\r\n\r\n') + 4))).toEqual({ status: 'ok' });
  } finally {
    socket.destroy();
    await server.dispose();
  }
});
