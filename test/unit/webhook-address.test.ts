// Where a batch's webhook may point (SPEC §7.4, issue 33): every IPv6 form that embeds an IPv4
// address is judged by that address, a name is judged by every address it resolves to, name
// resolution has a 5 s deadline, and the refusals that WEBHOOK_ALLOW_PRIVATE lifts name it.
import type { LookupAddress } from 'node:dns';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { checkWebhookDestination, deliverWebhook, parseWebhookUrl } from '@censo/api/testing';

const PRIVATE = 'endereço privado ou local (defina WEBHOOK_ALLOW_PRIVATE=true para redes internas)';
const UNRESOLVED = 'nome não resolvido';
const SECRET = `whsec_${Buffer.alloc(32).toString('base64')}`;

type Lookup = (
  hostname: string,
  options: object,
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/** A resolver that answers `address` for every name, as node:dns does with `all: true`. */
const resolvingTo =
  (address: string): Lookup =>
  (_hostname, _options, callback) =>
    setImmediate(() => callback(null, [{ address, family: address.includes(':') ? 6 : 4 }]));

/** A resolver that never answers (a DNS server that drops the query). */
const silent: Lookup = () => undefined;

/** The refusal's reason, or null when the destination is accepted. */
async function verdict(check: Promise<void>): Promise<string | null> {
  try {
    await check;
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

/**
 * Each IPv6 form that carries an IPv4 address, written around the IPv4 address `a.b.c.d` whose
 * 16-bit halves are `high` and `low`.
 */
function embeddings(dotted: string): [form: string, address: string][] {
  const [a, b, c, d] = dotted.split('.').map(Number) as [number, number, number, number];
  const high = ((a << 8) | b).toString(16);
  const low = ((c << 8) | d).toString(16);
  return [
    ['IPv4-mapped', `::ffff:${dotted}`],
    ['IPv4-translated (RFC 7915)', `::ffff:0:${dotted}`],
    ['IPv4-compatible ::/96', `::${dotted}`],
    ['6to4 2002::/16', `2002:${high}:${low}::1`],
    ['NAT64 64:ff9b::/96', `64:ff9b::${dotted}`],
  ];
}

const REFUSED_IPV4 = ['127.0.0.1', '10.1.2.3', '169.254.169.254'];
const PUBLIC_IPV4 = '93.184.215.14';

describe('an IPv6 address that embeds an IPv4 address is judged by it', () => {
  const refused = REFUSED_IPV4.flatMap((ipv4) => embeddings(ipv4).map(([form, address]) => [form, ipv4, address] as const));
  it.each(refused)('%s of %s (%s) is refused as private', async (_form, _ipv4, address) => {
    expect(await verdict(checkWebhookDestination(new URL(`https://[${address}]/`), false))).toBe(PRIVATE);
    // And so is a name that resolves to it.
    expect(await verdict(checkWebhookDestination(new URL('https://gancho.example/'), false, { lookup: resolvingTo(address) }))).toBe(
      PRIVATE,
    );
  });

  it.each(embeddings(PUBLIC_IPV4))('%s of a public address passes', async (_form, address) => {
    expect(await verdict(checkWebhookDestination(new URL(`https://[${address}]/`), false))).toBeNull();
    expect(await verdict(checkWebhookDestination(new URL('https://gancho.example/'), false, { lookup: resolvingTo(address) }))).toBeNull();
  });

  it.each([
    ['loopback', '::1'],
    ['unspecified', '::'],
    ['unique local', 'fd00::1'],
    ['link-local', 'fe80::1'],
    // Where its IPv4 sits depends on the operator's prefix length; the translator is local.
    ['local-use NAT64 64:ff9b:1::/48', `64:ff9b:1::${PUBLIC_IPV4}`],
    // Obsolete; the client address it carries is a NAT's, with the host behind it.
    ['Teredo 2001::/32', '2001:0:4136:e378:8000:63bf:a247:28f1'],
  ])('%s (%s) is refused', async (_name, address) => {
    expect(await verdict(checkWebhookDestination(new URL(`https://[${address}]/`), false))).toBe(PRIVATE);
  });

  it('a public IPv6 address passes; WEBHOOK_ALLOW_PRIVATE lets every form through', async () => {
    expect(await verdict(checkWebhookDestination(new URL('https://[2606:4700:4700::1111]/'), false))).toBeNull();
    for (const [, address] of embeddings('127.0.0.1')) {
      expect(await verdict(checkWebhookDestination(new URL(`https://[${address}]/`), true))).toBeNull();
    }
  });

  it('a name with one private address among public ones is refused', async () => {
    const lookup: Lookup = (_hostname, _options, callback) =>
      setImmediate(() =>
        callback(null, [
          { address: PUBLIC_IPV4, family: 4 },
          { address: '::ffff:10.0.0.7', family: 6 },
        ]),
      );
    expect(await verdict(checkWebhookDestination(new URL('https://gancho.example/'), false, { lookup }))).toBe(PRIVATE);
  });
});

describe('name resolution', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a name still unresolved at the deadline is refused: nome não resolvido', async () => {
    const check = checkWebhookDestination(new URL('https://gancho.example/'), false, { lookup: silent, timeoutMs: 20 });
    expect(await verdict(check)).toBe(UNRESOLVED);
  });

  it('the deadline is 5 s by default', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let settled: string | null | undefined;
    void verdict(checkWebhookDestination(new URL('https://gancho.example/'), false, { lookup: silent })).then((reason) => {
      settled = reason;
    });
    await vi.advanceTimersByTimeAsync(4_999);
    expect(settled).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(settled).toBe(UNRESOLVED);
  });

  it('a name that does not exist, or resolves to nothing, is refused the same way', async () => {
    const notFound: Lookup = (hostname, _options, callback) =>
      setImmediate(() => callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []));
    const nothing: Lookup = (_hostname, _options, callback) => setImmediate(() => callback(null, []));
    for (const lookup of [notFound, nothing]) {
      expect(await verdict(checkWebhookDestination(new URL('https://gancho.example/'), false, { lookup }))).toBe(UNRESOLVED);
    }
  });
});

describe('the refusals name WEBHOOK_ALLOW_PRIVATE where it applies', () => {
  const refusal = (run: () => unknown): string => {
    try {
      run();
      return 'aceita';
    } catch (err) {
      return (err as Error).message;
    }
  };

  it('http: refused unless WEBHOOK_ALLOW_PRIVATE=true, which the reason names; another scheme is just not https', () => {
    expect(refusal(() => parseWebhookUrl('http://gancho.example/', false))).toBe(
      'a URL deve usar https (defina WEBHOOK_ALLOW_PRIVATE=true para http em redes internas)',
    );
    expect(parseWebhookUrl('http://gancho.example/', true).href).toBe('http://gancho.example/');
    expect(refusal(() => parseWebhookUrl('ftp://gancho.example/', true))).toBe('a URL deve usar https');
  });
});

describe('at delivery', () => {
  const message = (url: string) => ({ url, segredo: SECRET, id: 'msg_teste', body: '{}' });

  it('a name that now resolves to an embedded private address is not called', async () => {
    for (const [, address] of embeddings('127.0.0.1')) {
      const attempt = await deliverWebhook(message('https://gancho.example/'), {
        allowPrivate: false,
        resolution: { lookup: resolvingTo(address) },
      });
      expect(attempt).toEqual({ outcome: 'failed', detail: PRIVATE });
    }
  });

  it('a name that does not resolve in time fails the attempt (retried later)', async () => {
    const attempt = await deliverWebhook(message('https://gancho.example/'), {
      allowPrivate: false,
      resolution: { lookup: silent, timeoutMs: 20 },
    });
    expect(attempt).toEqual({ outcome: 'failed', detail: UNRESOLVED });
  });

  it('an IP literal in an embedded form is refused before any connection', async () => {
    const attempt = await deliverWebhook(message('https://[::127.0.0.1]:9/'), { allowPrivate: false });
    expect(attempt).toEqual({ outcome: 'failed', detail: PRIVATE });
  });
});
