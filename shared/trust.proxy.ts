import { isIP } from 'node:net';

const PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/**
 * TRUST_PROXY: `false` (default, the client address is the socket's), a number of proxy hops, or a
 * comma-separated list of trusted proxy addresses, subnets (CIDR) or the names loopback, linklocal,
 * uniquelocal. `true` is refused: it would trust any X-Forwarded-For, so anyone could pick the
 * address the rate limits count.
 */
export function parseTrustProxy(raw: string): false | number | string[] {
  const text = raw.trim();
  if (text === 'false') return false;
  if (/^\d{1,2}$/.test(text)) return Number(text) === 0 ? false : Number(text);
  const entries = text.split(',').map((e) => e.trim());
  for (const entry of entries) {
    if (PROXY_NAMES.includes(entry)) continue;
    const [address, bits, ...rest] = entry.split('/');
    const family = isIP(address ?? '');
    const maxBits = family === 6 ? 128 : 32;
    const bitsOk = bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= maxBits);
    if (family === 0 || !bitsOk || rest.length > 0) {
      throw new Error(`TRUST_PROXY must be false, a hop count, or addresses/subnets (or ${PROXY_NAMES.join(', ')}), comma-separated; not "${entry}"`);
    }
  }
  return entries;
}
