// GET /docs/json and GET /docs (SPEC §6): an OpenAPI 3 document generated from the route schemas,
// without auth, listing exactly the public routes with their responses and security.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/http.js';

// The OpenAPI document is walked freely by property name.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

/** Every public route, and only those: a new route fails here until it is documented or hidden. */
const PUBLIC_ROUTES = [
  'delete /api/lotes/{id}',
  'delete /api/tarefas/{id}',
  'get /api/lotes',
  'get /api/lotes/{id}',
  'get /api/lotes/{id}/cartas',
  'get /api/lotes/{id}/comparacao',
  'get /api/lotes/{id}/correcoes',
  'get /api/lotes/{id}/corrigidos',
  'get /api/lotes/{id}/divergencias',
  'get /api/lotes/{id}/falhas',
  'get /api/lotes/{id}/resumo',
  'get /api/lotes/{id}/tarefas',
  'get /api/query',
  'get /api/safras/{ano}',
  'get /api/tarefas/{id}',
  'get /api/tarefas/{id}/resultado',
  'get /healthz',
  'get /metrics',
  'get /readyz',
  'post /api/censo-corrigido',
  'post /api/divergencias-rf',
  'post /api/lotes',
  'post /api/lotes/{id}/censo-corrigido',
  'post /api/lotes/{id}/divergencias-rf',
  'post /api/lotes/{id}/fechar',
  'post /api/lotes/{id}/retorno-rf',
  'post /api/retorno-rf',
];

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

let server: TestServer;
let doc: Json;
beforeAll(async () => {
  server = await startTestServer();
  // No credential: the document is public.
  const response = await fetch(`${server.url}/docs/json`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  doc = (await response.json()) as Json;
});
afterAll(async () => {
  await server.dispose();
});

const operations = (): [string, string, Json][] =>
  Object.entries(doc.paths as Json).flatMap(([path, item]) =>
    Object.entries(item as Json)
      .filter(([method]) => METHODS.has(method))
      .map(([method, op]) => [path, method, op as Json] as [string, string, Json]),
  );

/** Every `$ref` anywhere in the document. */
function refs(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((item) => refs(item, found));
  else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') found.push(value);
      else refs(value, found);
    }
  }
  return found;
}

describe('the OpenAPI document', () => {
  it('is OpenAPI 3 with the service title, the package version and no servers', () => {
    expect(doc.openapi).toMatch(/^3\.(0|1)\.\d+$/);
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(doc.info).toMatchObject({ title: 'censo-api', version });
    expect(doc.servers).toBeUndefined();
  });

  it('lists exactly the public routes, with their methods', () => {
    const listed = operations()
      .map(([path, method]) => `${method} ${path}`)
      .sort();
    expect(listed).toEqual(PUBLIC_ROUTES);
  });

  it('hides /docs and /admin', () => {
    expect(Object.keys(doc.paths).filter((path) => path.startsWith('/docs') || path.startsWith('/admin'))).toEqual([]);
  });

  it('gives every operation a summary, a declared tag and responses that all have a description', () => {
    const tags = new Set((doc.tags as Json[]).map((tag) => tag.name));
    expect([...tags].sort()).toEqual(['consulta', 'lotes', 'operação', 'retorno', 'safras', 'tarefas']);
    for (const [path, method, op] of operations()) {
      const where = `${method} ${path}`;
      expect(op.summary, where).toEqual(expect.any(String));
      expect(op.tags?.length, where).toBeGreaterThan(0);
      for (const tag of op.tags) expect(tags.has(tag), `${where}: tag ${tag}`).toBe(true);
      const responses = Object.entries(op.responses as Json);
      expect(responses.length, where).toBeGreaterThan(0);
      for (const [status, response] of responses) {
        expect(status, where).toMatch(/^[1-5]\d\d$/);
        expect((response as Json).description, `${where} ${status}`).toEqual(expect.any(String));
        expect((response as Json).description, `${where} ${status}`).not.toBe('Default Response');
      }
    }
  });

  it('declares the x-api-key scheme, and every referenced scheme and schema exists', () => {
    expect(doc.components.securitySchemes.apiKey).toEqual({ type: 'apiKey', in: 'header', name: 'x-api-key' });
    expect(doc.components.securitySchemes.metricsToken).toMatchObject({ type: 'http', scheme: 'bearer' });
    for (const [path, method, op] of operations()) {
      for (const requirement of (op.security ?? []) as Json[]) {
        for (const scheme of Object.keys(requirement)) {
          expect(doc.components.securitySchemes[scheme], `${method} ${path}: ${scheme}`).toBeDefined();
        }
      }
    }
    for (const ref of refs(doc)) {
      expect(ref).toMatch(/^#\/components\/schemas\//);
      expect(doc.components.schemas[ref.slice('#/components/schemas/'.length)], ref).toBeDefined();
    }
  });

  it('requires x-api-key on /api/*, a bearer token or x-api-key on /metrics, nothing on health', () => {
    const security = (path: string, method: string) => doc.paths[path][method].security;
    expect(security('/api/divergencias-rf', 'post')).toEqual([{ apiKey: [] }]);
    expect(security('/api/retorno-rf', 'post')).toEqual([{ apiKey: [] }]);
    expect(security('/api/query', 'get')).toEqual([{ apiKey: [] }]);
    expect(security('/metrics', 'get')).toEqual([{ metricsToken: [] }, { apiKey: [] }]);
    expect(security('/healthz', 'get')).toBeUndefined();
    expect(security('/readyz', 'get')).toBeUndefined();
  });

  it('documents the SPEC statuses with { erro } bodies and the SPEC messages', () => {
    const responses = (path: string, method: string) => doc.paths[path][method].responses as Json;
    expect(Object.keys(responses('/api/divergencias-rf', 'post'))).toEqual(
      expect.arrayContaining(['200', '400', '401', '413', '503', '504']),
    );
    expect(Object.keys(responses('/api/retorno-rf', 'post'))).toEqual(
      expect.arrayContaining(['200', '400', '401', '413', '422', '503', '504']),
    );
    expect(Object.keys(responses('/api/query', 'get'))).toEqual(expect.arrayContaining(['200', '400', '401', '503', '504']));
    expect(Object.keys(responses('/readyz', 'get'))).toEqual(['200', '503']);
    const erro = responses('/api/retorno-rf', 'post')['422'];
    expect(erro.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Erro' });
    expect(erro.description).toContain('O arquivo txt não corresponde ao retorno (linha <n>).');
    expect(responses('/api/divergencias-rf', 'post')['413'].description).toContain('Arquivo excede o limite de 25 MB.');
    expect(responses('/api/divergencias-rf', 'post')['401'].description).toContain('Credencial inválida (header x-api-key).');
    expect(doc.components.schemas.Erro).toMatchObject({ type: 'object', required: ['erro'] });
  });

  it('describes the multipart bodies of the upload routes (documentation only)', () => {
    const body = (path: string) => doc.paths[path].post.requestBody.content['multipart/form-data'].schema;
    expect(body('/api/divergencias-rf')).toMatchObject({
      required: ['retorno'],
      properties: { retorno: { type: 'string', format: 'binary' } },
    });
    expect(body('/api/retorno-rf')).toMatchObject({
      required: ['retorno', 'txt'],
      properties: { retorno: { format: 'binary' }, txt: { format: 'binary' } },
    });
  });

  it('documents the query route parameters', () => {
    const names = (doc.paths['/api/query'].get.parameters as Json[]).map((p) => `${p.in}:${p.name}`);
    expect(names).toEqual(expect.arrayContaining(['query:query', 'query:cursor', 'query:limit', 'query:format']));
  });
});

describe('GET /docs', () => {
  it('serves the UI without auth', async () => {
    const response = await fetch(`${server.url}/docs`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await response.text()).toContain('swagger');
  });
});

describe('validation comes from the same schemas', () => {
  it('the upload body is not validated by Fastify: a non-multipart body is our own 400', async () => {
    const response = await fetch(`${server.url}/api/divergencias-rf`, {
      method: 'POST',
      headers: { 'x-api-key': 'test-key', 'content-type': 'application/json' },
      body: '{"retorno": 1}',
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ erro: 'A requisição deve ser multipart/form-data.' });
  });
});
