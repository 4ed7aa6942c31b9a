/**
 * SQS for `npm start` and tests: fauxqs 1.9 (the real SQS JSON protocol, in-process, in memory)
 * with the job queue and its dead-letter queue created from JOB_QUEUE / DEAD_LETTER_QUEUE, the same
 * definitions the CDK construct uses. Visibility, receive counts and redrive happen inside fauxqs.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DEAD_LETTER_QUEUE, JOB_QUEUE } from '../contract/resources';
import { openQueueJournal, readQueueJournal, type QueueJournal, type SpiedSqsMessage } from './queue-journal';

/** The part of fauxqs' `FauxqsServer` we use (its .d.ts imports `.ts` paths our resolver cannot follow). */
interface FauxqsServer {
  readonly port: number;
  /** Present when started with `messageSpies`; the queue calls `addMessage` synchronously. */
  readonly spy: { addMessage(message: SpiedSqsMessage): void };
  stop(): Promise<void>;
}
interface FauxqsModule {
  startFauxqs(options: {
    port?: number;
    logger?: boolean;
    host?: string;
    defaultRegion?: string;
    messageSpies?: boolean | { bufferSize?: number };
  }): Promise<FauxqsServer>;
  /** Makes `*.localhost` resolve to 127.0.0.1 in this process; returns the undo. */
  interceptLocalhostDns(hostname?: string): () => void;
}

// The DNS interception is process-wide: installed by the first open LocalSqs, removed by the last.
let dnsUsers = 0;
let restoreDns: (() => void) | undefined;
const useLocalhostDns = (fauxqs: FauxqsModule): (() => void) => {
  if (dnsUsers === 0) restoreDns = fauxqs.interceptLocalhostDns('localhost');
  dnsUsers += 1;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    dnsUsers -= 1;
    if (dnsUsers === 0) {
      restoreDns?.();
      restoreDns = undefined;
    }
  };
};

export interface LocalSqs {
  /** `http://127.0.0.1:<port>`, for AWS_ENDPOINT_URL_SQS. */
  readonly endpoint: string;
  readonly queueUrl: string;
  readonly dlqUrl: string;
  /** ARN of the job queue, as Lambda puts it in `eventSourceARN`. */
  readonly queueArn: string;
  /** The journal keeping the queue across restarts (absent: memory only). */
  readonly journal?: Pick<QueueJournal, 'compact' | 'size' | 'text'>;
  /** Messages sent again at start from the journal. */
  readonly restored: number;
  close(): Promise<void>;
}

export interface LocalSqsOptions {
  /** 0 (default) picks a free port. */
  readonly port?: number;
  /** @default JOB_QUEUE.visibilityTimeoutSeconds (tests use 0 or 1 so redrive takes seconds, not hours) */
  readonly visibilityTimeoutSeconds?: number;
  /** @default JOB_QUEUE.maxReceiveCount */
  readonly maxReceiveCount?: number;
  /** @default JOB_QUEUE.logicalName */
  readonly queueName?: string;
  /** @default DEAD_LETTER_QUEUE.logicalName */
  readonly dlqName?: string;
  readonly region?: string;
  /**
   * A journal file (local/queue-journal.ts): messages not deleted before a stop or crash are sent
   * again at the next start. @default - memory only
   */
  readonly journalFile?: string;
}

/** Finds fauxqs' ESM entry: its package.json exports only an `import` condition, so `require.resolve` cannot. */
const fauxqsEntry = (): string => {
  for (const dir of require.resolve.paths('fauxqs') ?? []) {
    const pkgPath = path.join(dir, 'fauxqs', 'package.json');
    if (!fs.existsSync(pkgPath)) continue;
    const pkg = JSON.parse(fs.readFileSync(pkgPath, 'utf8')) as {
      exports?: { '.'?: { import?: { default?: string } } };
      main?: string;
    };
    return path.join(dir, 'fauxqs', pkg.exports?.['.']?.import?.default ?? pkg.main ?? 'dist/app.js');
  }
  throw new Error('fauxqs is not installed (npm install fauxqs@1.9)');
};

/**
 * Loads fauxqs (ESM only) from this CommonJS code. A native dynamic `import()` works under node and
 * tsx; jest's module sandbox refuses it without --experimental-vm-modules, so we fall back to Node's
 * own `require(esm)` (unflagged since Node 20.19), reached through getBuiltinModule to bypass jest.
 */
const loadFauxqs = async (): Promise<FauxqsModule> => {
  const entry = fauxqsEntry();
  try {
    // `new Function` keeps TypeScript's CommonJS output from rewriting import() into require().
    const nativeImport = new Function('specifier', 'return import(specifier)') as (s: string) => Promise<FauxqsModule>;
    return await nativeImport(entry);
  } catch (importError) {
    const nodeModule = process.getBuiltinModule('node:module');
    if (!nodeModule) throw importError;
    return nodeModule.createRequire(__filename)(entry) as FauxqsModule;
  }
};

/** Starts fauxqs on 127.0.0.1 and creates the job queue and its DLQ (RedrivePolicy, VisibilityTimeout). */
export const startLocalSqs = async (options: LocalSqsOptions = {}): Promise<LocalSqs> => {
  const fauxqs = await loadFauxqs();
  const region = options.region ?? process.env.AWS_REGION ?? 'us-east-1';
  const server = await fauxqs.startFauxqs({
    port: options.port ?? 0,
    logger: false,
    defaultRegion: region,
    // The spy is the journal's hook; its own buffer is kept minimal.
    ...(options.journalFile ? { messageSpies: { bufferSize: 1 } } : {}),
  });
  const journal = options.journalFile ? openQueueJournal(options.journalFile) : undefined;
  const carried = options.journalFile ? readQueueJournal(options.journalFile) : [];
  if (journal) {
    const spy = server.spy;
    const original = spy.addMessage.bind(spy);
    spy.addMessage = (message: SpiedSqsMessage) => {
      journal.record(message);
      original(message);
    };
  }
  // Queue URLs look like http://sqs.<region>.localhost:<port>/000000000000/jobs, and fauxqs finds a
  // queue by its full URL. An SQS client whose endpoint comes from AWS_ENDPOINT_URL_SQS (the
  // handlers') sends to the queue URL's host, which not every resolver maps to loopback
  // (RFC 6761 says it should): make it so in this process while the queue is open.
  const releaseDns = useLocalhostDns(fauxqs);
  const endpoint = `http://127.0.0.1:${server.port}`;
  const close = async (): Promise<void> => {
    releaseDns();
    await server.stop();
  };

  const client = new SQSClient({ endpoint, region, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  try {
    const dlq = await client.send(
      new CreateQueueCommand({
        QueueName: options.dlqName ?? DEAD_LETTER_QUEUE.logicalName,
        Attributes: { MessageRetentionPeriod: String(DEAD_LETTER_QUEUE.retentionSeconds) },
      }),
    );
    const dlqUrl = required(dlq.QueueUrl, 'DLQ url');
    const dlqAttributes = await client.send(
      new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn'] }),
    );
    const dlqArn = required(dlqAttributes.Attributes?.QueueArn, 'DLQ arn');
    const queue = await client.send(
      new CreateQueueCommand({
        QueueName: options.queueName ?? JOB_QUEUE.logicalName,
        Attributes: {
          VisibilityTimeout: String(options.visibilityTimeoutSeconds ?? JOB_QUEUE.visibilityTimeoutSeconds),
          MessageRetentionPeriod: String(JOB_QUEUE.retentionSeconds),
          RedrivePolicy: JSON.stringify({
            deadLetterTargetArn: dlqArn,
            maxReceiveCount: String(options.maxReceiveCount ?? JOB_QUEUE.maxReceiveCount),
          }),
        },
      }),
    );
    const queueUrl = required(queue.QueueUrl, 'queue url');
    const queueAttributes = await client.send(
      new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
    );
    let restored = 0;
    if (journal) {
      const urls: Record<string, { url: string; retentionMs: number }> = {
        [options.queueName ?? JOB_QUEUE.logicalName]: {
          url: queueUrl,
          retentionMs: JOB_QUEUE.retentionSeconds * 1_000,
        },
        [options.dlqName ?? DEAD_LETTER_QUEUE.logicalName]: {
          url: dlqUrl,
          retentionMs: DEAD_LETTER_QUEUE.retentionSeconds * 1_000,
        },
      };
      const now = Date.now();
      for (const message of carried) {
        const target = urls[message.queueName];
        // SQS drops a message after its retention period, stopped or not.
        if (!target || message.sentAtMs + target.retentionMs <= now) continue;
        journal.resending(message.sentAtMs);
        await client.send(
          new SendMessageCommand({
            QueueUrl: target.url,
            MessageBody: message.body,
            ...(Object.keys(message.messageAttributes).length > 0
              ? {
                  MessageAttributes: Object.fromEntries(
                    Object.entries(message.messageAttributes).map(([name, v]) => [
                      name,
                      {
                        DataType: v.DataType,
                        ...(v.StringValue !== undefined ? { StringValue: v.StringValue } : {}),
                        // fauxqs keeps binary values base64-encoded.
                        ...(v.BinaryValue !== undefined ? { BinaryValue: Buffer.from(v.BinaryValue, 'base64') } : {}),
                      },
                    ]),
                  ),
                }
              : {}),
          }),
        );
        restored += 1;
      }
      journal.commit();
    }
    return {
      endpoint,
      queueUrl,
      dlqUrl,
      queueArn: required(queueAttributes.Attributes?.QueueArn, 'queue arn'),
      ...(journal ? { journal } : {}),
      restored,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  } finally {
    client.destroy();
  }
};

const required = (value: string | undefined, what: string): string => {
  if (!value) throw new Error(`fauxqs returned no ${what}`);
  return value;
};
