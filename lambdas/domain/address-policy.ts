/**
 * Which destinations the relay refuses to call (SSRF policy for callback and chat URLs). Pure; the
 * connect-time guard (adapters/ssrf-guard.ts) applies the same policy to resolved addresses.
 */
import { isIPv4, isIPv6 } from 'node:net';

/** IPv4 ranges that are not the public internet: [first octets as a 32-bit number, prefix length]. */
const REFUSED_V4: readonly (readonly [string, number])[] = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, incl. the cloud metadata service 169.254.169.254
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, incl. broadcast 255.255.255.255
];

const v4ToInt = (ip: string): number => ip.split('.').reduce((acc, octet) => acc * 256 + Number(octet), 0);

const inV4Range = (value: number, base: string, bits: number): boolean => {
  const size = 2 ** (32 - bits);
  const start = v4ToInt(base);
  return value >= start && value < start + size;
};

const refusedV4 = (ip: string): boolean => {
  const value = v4ToInt(ip);
  return REFUSED_V4.some(([base, bits]) => inV4Range(value, base, bits));
};

/** The eight 16-bit groups of an IPv6 address (a trailing dotted IPv4 part is folded in). */
const v6Groups = (ip: string): number[] => {
  let text = ip;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const v4 = v4ToInt(dotted[1]);
    text = `${text.slice(0, dotted.index)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const parse = (part: string | undefined) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []);
  const left = parse(head);
  const right = parse(tail);
  return tail === undefined ? left : [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
};

const embeddedV4 = (g: readonly number[], hiIndex: number): string =>
  [g[hiIndex] >> 8, g[hiIndex] & 0xff, g[hiIndex + 1] >> 8, g[hiIndex + 1] & 0xff].join('.');

const refusedV6 = (ip: string): boolean => {
  const g = v6Groups(ip);
  if (g.length !== 8 || g.some((x) => Number.isNaN(x))) return true;
  const zeroPrefix = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeroPrefix(5) && g[5] === 0xffff) return refusedV4(embeddedV4(g, 6)); // IPv4-mapped ::ffff:a.b.c.d
  if (zeroPrefix(6)) return true; // ::, ::1 and the deprecated IPv4-compatible ::a.b.c.d
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return refusedV4(embeddedV4(g, 6)); // NAT64 64:ff9b::/96
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return true; // local-use NAT64 64:ff9b:1::/48
  if (g[0] === 0x2002) return refusedV4(embeddedV4(g, 1)); // 6to4 carries an IPv4 address
  if (g[0] === 0x2001 && g[1] === 0) return true; // Teredo tunnels
  if (g[0] === 0x2001 && g[1] === 0xdb8) return true; // documentation
  if (g[0] === 0x100 && g[1] === 0 && g[2] === 0 && g[3] === 0) return true; // discard-only 100::/64
  if ((g[0] & 0xfe00) === 0xfc00) return true; // unique-local fc00::/7
  if ((g[0] & 0xffc0) === 0xfe80) return true; // link-local fe80::/10
  if ((g[0] & 0xffc0) === 0xfec0) return true; // deprecated site-local fec0::/10
  if ((g[0] & 0xff00) === 0xff00) return true; // multicast
  return false;
};

/**
 * True when `ip` is not a public unicast address: loopback, private, link-local (incl.
 * 169.254.169.254), CGNAT, unique-local, multicast, reserved, or an IPv4-mapped / NAT64 / 6to4
 * IPv6 address embedding one of those. Anything that is not an IP address at all is refused too.
 */
export const isRefusedAddress = (ip: string): boolean => {
  const bare = ip.replace(/^\[|\]$/g, '').replace(/%.*$/, ''); // brackets from URLs, zone ids from link-local
  if (isIPv4(bare)) return refusedV4(bare);
  if (isIPv6(bare)) return refusedV6(bare.toLowerCase());
  return true;
};

/** The reason given for anything that is not an absolute http(s) URL. */
export const NOT_HTTP_URL_REASON = 'must be an absolute http(s) URL';

/**
 * Why a callback or chat URL is refused, or undefined when it may be tried: it must be an absolute
 * http(s) URL and its host must not be a literal refused address or `localhost`. Host names are
 * judged again at connect time, after DNS (see adapters/ssrf-guard.ts).
 */
export const refusedUrlReason = (url: string): string | undefined => {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return NOT_HTTP_URL_REASON;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return NOT_HTTP_URL_REASON;
  // WHATWG URL parsing already normalizes 0x7f.1, 2130706433 and friends to dotted IPv4.
  const host = parsed.hostname.toLowerCase().replace(/\.$/, '');
  if (host === '') return NOT_HTTP_URL_REASON;
  if (host === 'localhost' || host.endsWith('.localhost')) return 'must not point at localhost';
  const bare = host.replace(/^\[|\]$/g, '');
  if ((isIPv4(bare) || isIPv6(bare)) && isRefusedAddress(bare))
    return 'must not point at a private, loopback or reserved address';
  return undefined;
};
