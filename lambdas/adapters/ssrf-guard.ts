/**
 * Connect-time SSRF guard for callback and chat deliveries. The address is judged when the socket
 * is opened, after DNS, so a name that resolved to a public address during validation and to
 * 169.254.169.254 a moment later (DNS rebinding) is still refused. Literal IP hosts skip DNS in
 * Node's net.connect, so they are judged before connecting (see `refusedLiteralHost`).
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import { isRefusedAddress } from '../domain/address-policy';
import { BlockedDestinationError } from '../domain/errors';

/** The shape of `dns.lookup` with `all: true`, injectable for tests. */
export type Resolver = (
  hostname: string,
  options: LookupOptions & { all: true },
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** The `lookup` option of net.connect / http.request, in both forms Node calls it (`all` or not). */
export type ConnectLookup = (hostname: string, options: LookupOptions, callback: LookupCallback) => void;

const defaultResolver: Resolver = (hostname, options, callback) => dnsLookup(hostname, options, callback);

const resolvingLookup =
  (resolver: Resolver, judge: boolean): ConnectLookup =>
  (hostname, options, callback) => {
    resolver(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      const list = addresses ?? [];
      if (list.length === 0)
        return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), []);
      // Every answer is judged: an attacker controlling DNS can mix a public and a private address.
      if (judge && list.some((a) => isRefusedAddress(a.address))) {
        return callback(
          new BlockedDestinationError(`destination ${hostname} resolves to a refused address`) as NodeJS.ErrnoException,
          [],
        );
      }
      // Node ≥ 20 asks for `all` when autoSelectFamily (happy eyeballs) is on, a single address otherwise.
      if (options.all) return callback(null, list);
      return callback(null, list[0].address, list[0].family);
    });
  };

/** A `lookup` for net.connect that fails with BlockedDestinationError if any resolved address is refused. */
export const guardedLookup = (resolver: Resolver = defaultResolver): ConnectLookup => resolvingLookup(resolver, true);

/**
 * The `lookup` to connect with: guarded unless `allowPrivate`. Undefined means Node's own DNS lookup
 * (allowPrivate and no injected resolver); an injected resolver applies either way, so tests can map
 * a name to a local receiver and show that only the guard's verdict differs.
 */
export const connectLookup = (allowPrivate: boolean, resolver?: Resolver): ConnectLookup | undefined => {
  if (!allowPrivate) return guardedLookup(resolver);
  return resolver ? resolvingLookup(resolver, false) : undefined;
};

/**
 * The refusal for a URL's host when it is an IP literal the policy refuses, else undefined. Needed
 * because net.connect never calls `lookup` for an IP literal. Accepts `[::1]` or `::1`.
 */
export const refusedLiteralHost = (hostname: string): BlockedDestinationError | undefined => {
  const host = hostname.replace(/^\[|\]$/g, '');
  return isIP(host) !== 0 && isRefusedAddress(host)
    ? new BlockedDestinationError('destination is a refused address')
    : undefined;
};

/** True when `error` or one of its causes is a BlockedDestinationError. */
export const isBlockedDestination = (error: unknown): boolean => {
  // Cause-walking: the error may come wrapped.
  for (
    let e: unknown = error, depth = 0;
    typeof e === 'object' && e !== null && depth < 5;
    e = (e as { cause?: unknown }).cause, depth += 1
  ) {
    if (e instanceof BlockedDestinationError) return true;
  }
  return false;
};
