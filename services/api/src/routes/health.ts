// Liveness and readiness (SPEC §6), without authentication so orchestrators can probe them.
import type { FastifyInstance } from 'fastify';
// 'warn' alone would make probes log on an app whose LOG_LEVEL is 'silent' or 'error'.
import { quieterLevel } from '../plugins/metrics.js';

export interface ReadinessProbe {
  readonly name: string;
  isReady(): Promise<boolean>;
}

export interface HealthRoutesOptions {
  readonly probes: readonly ReadinessProbe[];
  /**
   * Settings the service cannot serve without, by check name (`api_key`): each is reported as
   * `ausente` and keeps readiness at 503 (SPEC §9), so an orchestrator sends no traffic to a
   * replica that would answer every caller 503.
   */
  readonly missing?: readonly string[];
}

const statusSchema = {
  type: 'object',
  properties: {
    status: { type: 'string' },
    checks: { type: 'object', additionalProperties: { type: 'string', enum: ['ok', 'falha', 'ausente'] } },
  },
} as const;

export async function healthRoutes(app: FastifyInstance, { probes, missing = [] }: HealthRoutesOptions) {
  app.get(
    '/healthz',
    {
      logLevel: quieterLevel(app, 'warn'),
      schema: {
        tags: ['operação'],
        summary: 'Liveness: o processo responde',
        response: { 200: { ...statusSchema, description: 'O processo está vivo: `{"status":"ok"}`.' } },
      },
    },
    async () => ({ status: 'ok' }),
  );

  app.get(
    '/readyz',
    {
      logLevel: quieterLevel(app, 'warn'),
      schema: {
        tags: ['operação'],
        summary: 'Readiness: API_KEY definida; Redis (com REDIS_URL) e PostgreSQL (com DATABASE_URL) respondem',
        response: {
          200: { ...statusSchema, description: 'Pronto: cada dependência configurada respondeu (`checks`).' },
          503: {
            ...statusSchema,
            description:
              'Indisponível: alguma dependência configurada não respondeu (`falha`), ou falta uma configuração obrigatória (`"api_key": "ausente"` sem API_KEY); `checks` diz qual.',
          },
        },
      },
    },
    async (_request, reply) => {
      const results = await Promise.all(probes.map(async (probe) => [probe.name, await probe.isReady().catch(() => false)] as const));
      const ready = missing.length === 0 && results.every(([, ok]) => ok);
      const checks = Object.fromEntries([
        ...results.map(([name, ok]) => [name, ok ? 'ok' : 'falha']),
        ...missing.map((name) => [name, 'ausente']),
      ]);
      return reply.code(ready ? 200 : 503).send({ status: ready ? 'ok' : 'indisponível', checks });
    },
  );
}
