// A replica that is closing (SIGTERM in a rolling upgrade, a scale-down) finishes what it has and
// sends every new request elsewhere with the documented 503 `{"erro"}` (SPEC §5, §9): a keep-alive
// connection that carried a request in flight when the close began is the one way a request still
// reaches it, and Fastify's own answer there was a `{"error"}` body written past every hook.
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

it('a request that arrives while the replica closes: 503 {"erro"} with Retry-After and Connection: close; the one in flight is answered whole', async () => {
  const server = await startHarness('embedded', { redisUrl: redis.url });
  const socket = net.connect(Number(new URL(server.url).port), '127.0.0.1');
  try {
    server.gate.close();
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
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
    await waitFor(async () => received.includes('Serviço reiniciando'), { what: 'the second answer' });
    const [first, second] = received.split(/(?=HTTP\/1\.1 )/);
    expect(first).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(JSON.parse(first!.slice(first!.indexOf('\r\n\r\n') + 4))).toEqual(basico.expectedDivergencias);
    expect(second).toMatch(/^HTTP\/1\.1 503 /);
    expect(second).toMatch(/\r\nretry-after: 1\r\n/i);
    expect(second).toMatch(/\r\nconnection: close\r\n/i);
    expect(JSON.parse(second!.slice(second!.indexOf('\r\n\r\n') + 4))).toEqual({
      erro: 'Serviço reiniciando, tente novamente em instantes.',
    });
  } finally {
    socket.destroy();
    await server.dispose();
  }
});
