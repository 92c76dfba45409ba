// Where an integration test finds a server (Redis, PostgreSQL): the URL the environment names,
// else a throwaway container when a Docker engine answers, else the conventional local server.
// 127.0.0.1 rather than `localhost`: Node may resolve localhost to ::1 first, and a server
// listening on IPv4 only would then refuse the connection.
import { existsSync } from 'node:fs';

export interface TestService {
  readonly url: string;
  stop(): Promise<void>;
}

function dockerAvailable(): boolean {
  return Boolean(process.env.DOCKER_HOST) || existsSync('/var/run/docker.sock');
}

export async function resolveTestService(options: {
  readonly fromEnv: string | undefined;
  readonly container: () => Promise<TestService>;
  readonly localUrl: string;
}): Promise<TestService> {
  const fromEnv = options.fromEnv?.trim();
  if (fromEnv) return { url: fromEnv, stop: async () => undefined };
  if (dockerAvailable()) {
    try {
      return await options.container();
    } catch {
      // No usable engine after all (socket present, daemon down): fall back to the local server.
    }
  }
  return { url: options.localUrl, stop: async () => undefined };
}
