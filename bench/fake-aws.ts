/**
 * What a cold start's first invocation talks to, faked in the bench process: one HTTP server that
 * speaks the AWS JSON protocol for Secrets Manager `GetSecretValue` and Step Functions
 * `StartExecution` and takes callback / chat POSTs, plus a UDP socket standing in for the X-Ray
 * daemon (it counts the segment documents a traced function sends). DynamoDB (dynalite), SQS
 * (fauxqs) and the marketplace (simulator) are the local runtime's own stand-ins.
 *
 * A bundled handler carries its own copy of the SDK, so an in-process mock cannot reach it; the
 * `AWS_ENDPOINT_URL_<SERVICE>` variables point that copy here instead.
 */
import { createSocket, type Socket } from 'node:dgram';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeAws {
  /** `http://127.0.0.1:<port>`: AWS_ENDPOINT_URL_SECRETS_MANAGER, AWS_ENDPOINT_URL_SFN, callbacks under `/callback`. */
  readonly endpoint: string;
  /** `127.0.0.1:<port>` for AWS_XRAY_DAEMON_ADDRESS. */
  readonly daemonAddress: string;
  /** Requests per operation (`secretsmanager.GetSecretValue`, `callback`, …). */
  readonly calls: Record<string, number>;
  /** Segment documents received on the daemon socket since the last `takeSegments()`. */
  takeSegments(): number;
  close(): Promise<void>;
}

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });

const send = (res: ServerResponse, status: number, body: unknown): void => {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1', 'content-length': Buffer.byteLength(text) });
  res.end(text);
};

/**
 * Starts the fake. `secrets` maps a secret id (ARN) to its AWSCURRENT value; AWSPREVIOUS answers
 * ResourceNotFoundException, as Secrets Manager does before a secret's first rotation.
 */
export const startFakeAws = async (secrets: Readonly<Record<string, string>>): Promise<FakeAws> => {
  const calls: Record<string, number> = {};
  const server: Server = createServer((req, res) => {
    void readBody(req).then(
      (raw) => {
        const target = String(
          req.headers['x-amz-target'] ?? (req.url?.startsWith('/callback') ? 'callback' : 'unknown'),
        );
        calls[target] = (calls[target] ?? 0) + 1;
        const body = (raw ? JSON.parse(raw) : {}) as Record<string, unknown>;
        if (target === 'secretsmanager.GetSecretValue') {
          const id = String(body.SecretId);
          const stage = String(body.VersionStage ?? 'AWSCURRENT');
          if (secrets[id] === undefined || stage !== 'AWSCURRENT') {
            send(res, 400, {
              __type: 'ResourceNotFoundException',
              Message: "Secrets Manager can't find the specified secret value for staging label: " + stage,
            });
            return;
          }
          send(res, 200, {
            ARN: id,
            Name: id.split(':').pop(),
            SecretString: secrets[id],
            VersionId: 'v1',
            VersionStages: ['AWSCURRENT'],
            CreatedDate: 1_700_000_000,
          });
          return;
        }
        if (target === 'AWSStepFunctions.StartExecution') {
          send(res, 200, {
            executionArn: `${String(body.stateMachineArn).replace(':stateMachine:', ':execution:')}:${String(body.name)}`,
            startDate: Date.now() / 1000,
          });
          return;
        }
        if (target === 'callback') {
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.end('ok');
          return;
        }
        send(res, 400, { __type: 'UnknownOperationException', Message: target });
      },
      () => send(res, 500, { __type: 'InternalFailure' }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const daemon: Socket = createSocket('udp4');
  let segments = 0;
  daemon.on('message', () => {
    segments += 1;
  });
  await new Promise<void>((resolve) => daemon.bind(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    daemonAddress: `127.0.0.1:${daemon.address().port}`,
    calls,
    takeSegments: () => {
      const n = segments;
      segments = 0;
      return n;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await new Promise<void>((resolve) => daemon.close(() => resolve()));
    },
  };
};
