// Loopback ports for services a test starts itself (a redis-server, an API whose PUBLIC_URL must
// be known before it starts, an address where nothing listens).
import net from 'node:net';

/** A loopback port free now. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
