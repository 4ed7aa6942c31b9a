/**
 * TRUSTED_PROXIES (issue 39 §4): the rate limit's address is the TCP peer, unless the peer is a
 * trusted proxy; then X-Forwarded-For is read from the right, and a client's own entries on the left
 * are never reached.
 */
import type { IncomingMessage } from 'node:http';
import { sourceIpOf, urlForHost } from '../../../local/api-gateway';

const req = (peer: string, forwardedFor?: string): IncomingMessage =>
  ({
    socket: { remoteAddress: peer },
    headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
  }) as unknown as IncomingMessage;

describe('Function: sourceIpOf', () => {
  it('ignores X-Forwarded-For when no proxy is trusted', () => {
    expect(sourceIpOf(req('::ffff:203.0.113.9', '198.51.100.1'))).toBe('203.0.113.9');
  });

  it('ignores X-Forwarded-For from a peer that is not a trusted proxy', () => {
    expect(sourceIpOf(req('203.0.113.9', '198.51.100.1'), new Set(['127.0.0.1']))).toBe('203.0.113.9');
  });

  it('takes the right-most untrusted address behind trusted proxies', () => {
    const trusted = new Set(['127.0.0.1', '10.0.0.2']);
    // The client wrote "1.2.3.4" itself; nginx appended the address it saw, then another proxy.
    expect(sourceIpOf(req('::ffff:127.0.0.1', '1.2.3.4, 198.51.100.7, 10.0.0.2'), trusted)).toBe('198.51.100.7');
  });

  it('keeps the proxy itself when it sent no header', () => {
    expect(sourceIpOf(req('127.0.0.1'), new Set(['127.0.0.1']))).toBe('127.0.0.1');
  });
});

describe('Function: urlForHost', () => {
  it('reaches a wildcard bind through loopback, and a named one by its address', () => {
    expect(urlForHost('0.0.0.0', 5000)).toBe('http://127.0.0.1:5000');
    expect(urlForHost('::', 5000)).toBe('http://127.0.0.1:5000');
    expect(urlForHost('10.1.2.3', 5000)).toBe('http://10.1.2.3:5000');
    expect(urlForHost('::1', 5000)).toBe('http://[::1]:5000');
  });
});
