// SPEC §7.4 webhooks, in embedded and queue mode, against receivers on loopback
// (WEBHOOK_ALLOW_PRIVATE=true): the message and its Standard Webhooks signature, verified with the
// specification's own library and by hand; a receiver that fails and then succeeds; one that
// answers 410; the cancelled batch's message; the destination checks at creation and at delivery.
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliverWebhook } from '@censo/api/testing';
import { fixtureCases } from '../helpers/fixtures.js';
import { formWith } from '../helpers/http.js';
import { useTestRedis } from '../helpers/redis.js';
import { MODES, request, startHarness, waitForTarefa, type Harness, type Mode } from '../helpers/tarefas.js';
import { waitFor } from '../helpers/wait-for.js';
import { onThisMachine } from '../helpers/deadline.js';

const basico = fixtureCases().find((c) => c.name === 'basico')!;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

interface Received {
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

/** A webhook receiver on loopback that answers each call with the next status of `statuses` (the last one repeats). */
async function receiver(statuses: number[]) {
  const calls: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      calls.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.statusCode = statuses[Math.min(calls.length - 1, statuses.length - 1)]!;
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/ganchos/censo`,
    calls,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The signature as SPEC §7.4 words it, computed here without the service's code. */
function expectedSignature(secret: string, received: Received): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const signed = `${received.headers['webhook-id']}.${received.headers['webhook-timestamp']}.${received.body}`;
  return `v1,${createHmac('sha256', key).update(signed).digest('base64')}`;
}

const redis = useTestRedis();

describe.each(MODES)('%s mode', (mode: Mode) => {
  let server: Harness;
  beforeAll(async () => {
    server = await startHarness(mode, { redisUrl: redis.url });
  });
  afterAll(async () => {
    await server?.dispose();
  });

  const pending = () => server.app.tarefas.service.store.count('webhooks');

  async function finishedBatch(webhook: string): Promise<{ id: string; segredo: string }> {
    const created = await request(server, 'POST', '/api/lotes', {
      body: JSON.stringify({ nome: 'Escola Estadual', webhook }),
      headers: { 'content-type': 'application/json' },
    });
    expect(created.status).toBe(201);
    const { id, webhook_segredo: segredo } = created.json() as { id: string; webhook_segredo: string };
    const form = await formWith([{ field: 'retorno', path: basico.retorno.json, filename: 'ALUNOS MARIA.json' }], {
      referencia: '12345678',
    });
    const task = (await request(server, 'POST', `/api/lotes/${id}/divergencias-rf`, { body: form })).json().id as string;
    await waitForTarefa(server, task);
    await request(server, 'POST', `/api/lotes/${id}/fechar`);
    return { id, segredo };
  }

  it(
    'a receiver that fails and then succeeds: the same message, signed, until a 2xx; then nothing more',
    { timeout: onThisMachine(60_000) },
    async () => {
      const hook = await receiver([500, 204]);
      try {
        const { id, segredo } = await finishedBatch(hook.url);
        await waitFor(() => hook.calls.length >= 2, { timeoutMs: onThisMachine(30_000), what: 'the retry' });
        await waitFor(async () => (await pending()) === 0, { what: 'the message to be done' });
        expect(hook.calls).toHaveLength(2);
        const [first, second] = hook.calls as [Received, Received];
        expect(second.headers['webhook-id']).toBe(first.headers['webhook-id']);
        expect(first.headers['webhook-id']).toMatch(/^msg_[A-Za-z0-9_-]+$/);
        expect(second.body).toBe(first.body);
        for (const call of hook.calls) {
          expect(call.headers['content-type']).toBe('application/json');
          expect(call.headers['webhook-timestamp']).toMatch(/^\d{10}$/);
          expect(Math.abs(Number(call.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(600);
          expect(call.headers['webhook-signature']).toBe(expectedSignature(segredo, call));
          // The specification's reference library accepts it too.
          expect(new Webhook(segredo).verify(call.body, call.headers as Record<string, string>)).toEqual(JSON.parse(call.body));
        }
        const message = JSON.parse(first.body) as Record<string, unknown>;
        expect(message).toEqual({
          type: 'lote.concluido',
          timestamp: expect.stringMatching(RFC3339),
          data: { id, estado: 'concluido', tarefas: { total: 1, aguardando: 0, processando: 0, concluida: 1, falhou: 0, cancelada: 0 } },
        });
        // No personal data: nothing from the file, not even its name or reference.
        for (const text of ['52998224725', 'MARIA', 'ALU0001', '12345678', 'Escola Estadual']) expect(first.body).not.toContain(text);
      } finally {
        await hook.close();
      }
    },
  );

  it('a receiver that answers 410 gets no retry', async () => {
    const hook = await receiver([410]);
    try {
      await finishedBatch(hook.url);
      await waitFor(() => hook.calls.length === 1, { timeoutMs: onThisMachine(15_000), what: 'the delivery' });
      // Nothing left to send: no retry is scheduled.
      await waitFor(async () => (await pending()) === 0, { what: 'the message to be dropped' });
      expect(hook.calls).toHaveLength(1);
    } finally {
      await hook.close();
    }
  });

  it('a batch deleted before its end sends lote.cancelado with its unfinished tasks counted as cancelled', async () => {
    const hook = await receiver([200]);
    server.gate.close();
    try {
      const created = await request(server, 'POST', '/api/lotes', {
        body: JSON.stringify({ webhook: hook.url }),
        headers: { 'content-type': 'application/json' },
      });
      const { id, webhook_segredo: segredo } = created.json() as { id: string; webhook_segredo: string };
      await request(server, 'POST', `/api/lotes/${id}/divergencias-rf`, {
        body: await formWith([{ field: 'retorno', path: basico.retorno.json, filename: 'r.json' }]),
      });
      expect((await request(server, 'DELETE', `/api/lotes/${id}`)).status).toBe(204);
      await waitFor(() => hook.calls.length === 1, { timeoutMs: onThisMachine(15_000), what: 'the delivery' });
      const call = hook.calls[0]!;
      expect(call.headers['webhook-signature']).toBe(expectedSignature(segredo, call));
      expect(JSON.parse(call.body)).toMatchObject({
        type: 'lote.cancelado',
        data: { id, estado: 'cancelado', tarefas: { total: 1, aguardando: 0, processando: 0, concluida: 0, falhou: 0, cancelada: 1 } },
      });
    } finally {
      server.gate.open();
      await hook.close();
    }
  });
});

describe('destination checks (WEBHOOK_ALLOW_PRIVATE unset)', () => {
  let server: Harness;
  beforeAll(async () => {
    server = await startHarness('embedded', { redisUrl: redis.url, env: { WEBHOOK_ALLOW_PRIVATE: 'false' } });
  });
  afterAll(async () => {
    await server?.dispose();
  });

  const create = (webhook: string) =>
    request(server, 'POST', '/api/lotes', { body: JSON.stringify({ webhook }), headers: { 'content-type': 'application/json' } });

  const PRIVATE = 'endereço privado ou local (defina WEBHOOK_ALLOW_PRIVATE=true para redes internas)';
  it.each([
    ['http://example.com/ganchos', 'a URL deve usar https (defina WEBHOOK_ALLOW_PRIVATE=true para http em redes internas)'],
    ['https://127.0.0.1/ganchos', PRIVATE],
    ['https://localhost/ganchos', PRIVATE],
    ['https://10.1.2.3/', PRIVATE],
    ['https://192.168.0.10/', PRIVATE],
    ['https://169.254.169.254/latest/meta-data', PRIVATE],
    ['https://100.64.0.1/', PRIVATE],
    ['https://[::1]/', PRIVATE],
    ['https://[fd00::1]/', PRIVATE],
    ['https://0.0.0.0/', PRIVATE],
    // Every IPv6 form that embeds an IPv4 address is judged by that address (SPEC §7.4, issue 33).
    ['https://[::ffff:127.0.0.1]/', PRIVATE],
    ['https://[::127.0.0.1]/', PRIVATE],
    ['https://[::ffff:0:10.1.2.3]/', PRIVATE],
    ['https://[2002:a9fe:a9fe::1]/', PRIVATE],
    ['https://[64:ff9b::10.1.2.3]/', PRIVATE],
    ['https://user:senha@93.184.215.14/', 'a URL não pode conter usuário ou senha'],
  ])('%s is refused at creation: 400 Webhook inválido: %s.', async (webhook, motivo) => {
    const answer = await create(webhook);
    expect(answer.status).toBe(400);
    expect(answer.json()).toEqual({ erro: `Webhook inválido: ${motivo}.` });
  });

  it.each([
    'https://93.184.215.14/ganchos',
    'https://[::ffff:93.184.215.14]/',
    'https://[2002:5db8:d70e::1]/',
    'https://[64:ff9b::93.184.215.14]/',
  ])('https to a public address is accepted, in any form (checked without connecting): %s', async (webhook) => {
    expect((await create(webhook)).status).toBe(201);
  });

  it('is checked again at delivery, on the addresses the connection would use: a private one is never called', async () => {
    const hook = await receiver([200]);
    try {
      const port = new URL(hook.url).port;
      for (const url of [`http://127.0.0.1:${port}/x`, `https://localhost:${port}/x`]) {
        const attempt = await deliverWebhook(
          { url, segredo: `whsec_${Buffer.alloc(32).toString('base64')}`, id: 'msg_x', body: '{}' },
          { allowPrivate: false },
        );
        expect(attempt.outcome).toBe('failed');
      }
      expect(hook.calls).toHaveLength(0);
      // The same call with private addresses allowed reaches the receiver.
      const allowed = await deliverWebhook(
        { url: hook.url, segredo: `whsec_${Buffer.alloc(32).toString('base64')}`, id: 'msg_x', body: '{}' },
        { allowPrivate: true },
      );
      expect(allowed.outcome).toBe('delivered');
      expect(hook.calls).toHaveLength(1);
    } finally {
      await hook.close();
    }
  });
});
