// One pino logger per process, made by its entry point. Secrets never reach the output: the key
// headers are redacted wherever a request or its headers are logged (SPEC §4).
import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from './config.js';

export const REDACTED_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers["x-api-key"]',
  'headers.authorization',
  // Any object one level down that carries request headers: @fastify/multipart logs
  // `busboyOptions.headers` (with x-api-key) at trace level.
  '*.headers["x-api-key"]',
  '*.headers.authorization',
  '*.headers.cookie',
  '*.apiKey',
  '*.apiKeys',
  '*.queryApiKeys',
  '*.metricsToken',
  '*.cursorSecret',
  '*.password',
];

export function createLogger(config: Pick<Config, 'logLevel'>, bindings: Record<string, string>, destination?: DestinationStream): Logger {
  return pino(
    {
      level: config.logLevel,
      base: { pid: process.pid, ...bindings },
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}

export type { Logger };
