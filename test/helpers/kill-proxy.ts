/**
 * A pass-through HTTP proxy in front of the marketplace simulator that can kill the relay at an exact
 * point: once an answer matching `killAfter` has been written to the relay, `kill` runs before the
 * relay can act on it (issue 39's crash points "after create_order's answer" and "after the order is
 * running"). Test code only: the relay is not told anything.
 */
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface KillProxy {
  readonly url: string;
  /** Arms the proxy: the first answer whose path and body match runs `kill` right after it is sent. */
  killAfter(match: (path: string, body: string) => boolean, kill: () => void): void;
  /** Answers that triggered a kill so far. */
  kills(): number;
  close(): Promise<void>;
}

export const startKillProxy = async (target: string): Promise<KillProxy> => {
  const upstream = new URL(target);
  let armed: { match: (path: string, body: string) => boolean; kill: () => void } | undefined;
  let kills = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const forward = httpRequest(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: upstream.host },
        },
        (answer) => {
          const body: Buffer[] = [];
          answer.on('data', (c: Buffer) => body.push(c));
          answer.on('end', () => {
            const text = Buffer.concat(body).toString('utf8');
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            res.end(text, () => {
              const trigger = armed;
              if (trigger && trigger.match(req.url ?? '', text)) {
                armed = undefined;
                kills += 1;
                trigger.kill();
              }
            });
          });
        },
      );
      forward.on('error', () => res.destroy());
      forward.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    killAfter: (match, kill) => {
      armed = { match, kill };
    },
    kills: () => kills,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};
