/** A local HTTP receiver on an ephemeral port that records requests and answers from a script. */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** Decides the answer for one request; `hold` leaves it unanswered (a slow receiver). */
export type Reply = { status: number; body?: string; headers?: Record<string, string> } | 'hold';

export interface Receiver {
  readonly base: string;
  readonly port: number;
  readonly requests: ReceivedRequest[];
  /** Replies used in order; the last one repeats. */
  reply(...replies: Reply[]): void;
  close(): Promise<void>;
}

export const startReceiver = async (): Promise<Receiver> => {
  const requests: ReceivedRequest[] = [];
  let replies: Reply[] = [{ status: 200 }];
  const held: ServerResponse[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      const reply = replies.length > 1 ? (replies.shift() as Reply) : replies[0];
      if (reply === 'hold') {
        held.push(res);
        return;
      }
      res.writeHead(reply.status, reply.headers ?? {});
      res.end(reply.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    port,
    requests,
    reply: (...next) => {
      replies = next;
    },
    close: async () => {
      held.forEach((res) => res.destroy());
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};
