import { spawn, type ChildProcess } from 'node:child_process';
import { ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { SqsJobQueue } from '../../../lambdas/adapters/sqs-job-queue';
import type { JobMessage } from '../../../lambdas/domain/task';

// fauxqs is ESM-only and jest runs CommonJS here, so it runs in a child Node process (real SQS protocol over HTTP).
const FAUXQS_SCRIPT = `
import { startFauxqs } from 'fauxqs';
const server = await startFauxqs({ port: 0, logger: false });
const { queueUrl } = server.createQueue('jobs');
process.stdout.write(JSON.stringify({ address: server.address, queueUrl }) + '\\n');
process.stdin.on('end', () => server.stop().then(() => process.exit(0)));
process.stdin.resume();
`;

const startFauxqs = async (): Promise<{ address: string; queueUrl: string; child: ChildProcess }> => {
  const child = spawn(process.execPath, ['--input-type=module', '-e', FAUXQS_SCRIPT], {
    cwd: process.cwd(),
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    let buffer = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      if (buffer.includes('\n')) resolve(buffer.split('\n')[0]);
    });
    child.once('exit', (code) => reject(new Error(`fauxqs exited with ${code}`)));
  });
  return { ...(JSON.parse(line) as { address: string; queueUrl: string }), child };
};

describe('Adapter: SqsJobQueue (fauxqs)', () => {
  let fauxqs: Awaited<ReturnType<typeof startFauxqs>>;
  let client: SQSClient;
  beforeAll(async () => {
    fauxqs = await startFauxqs();
    client = new SQSClient({
      endpoint: fauxqs.address,
      region: 'us-east-1',
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });
  });
  afterAll(async () => {
    client.destroy();
    const exited = new Promise((resolve) => fauxqs.child.once('exit', resolve));
    fauxqs.child.stdin?.end();
    await exited;
  });

  it('sends the job as JSON with kind and task_id attributes', async () => {
    // Prepare
    const queue = new SqsJobQueue(client, fauxqs.queueUrl);
    const message: JobMessage = {
      task_id: 'task-9',
      kind: 'cancel-order',
      input: { order_id: 12, callback_url: 'https://example.com/cb' },
      origin: { source: 'webhook' },
    };
    // Act
    await queue.send(message);
    // Assess
    const { Messages } = await client.send(
      new ReceiveMessageCommand({ QueueUrl: fauxqs.queueUrl, MessageAttributeNames: ['All'], WaitTimeSeconds: 1 }),
    );
    expect(Messages).toHaveLength(1);
    expect(JSON.parse(Messages?.[0].Body ?? '')).toEqual(message);
    expect(Messages?.[0].MessageAttributes?.kind?.StringValue).toBe('cancel-order');
    expect(Messages?.[0].MessageAttributes?.task_id?.StringValue).toBe('task-9');
  });

  it('throws when the queue does not exist', async () => {
    const queue = new SqsJobQueue(client, fauxqs.queueUrl.replace(/jobs$/, 'missing'));
    await expect(
      queue.send({ task_id: 't', kind: 'status', input: {}, origin: { source: 'webhook' } }),
    ).rejects.toThrow();
  });
});
