import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { openQueueJournal, readQueueJournal } from '../../../local/queue-journal';

const published = (id: string, queueName = 'jobs', timestamp = 1_000) => ({
  service: 'sqs',
  queueName,
  messageId: id,
  body: `{"job":"${id}"}`,
  messageAttributes: { kind: { DataType: 'String', StringValue: 'cancel' } },
  status: 'published',
  timestamp,
});

describe('Module: queue-journal', () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'queue-journal-'));
    file = path.join(dir, 'queue.jsonl');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps the messages sent and not deleted, the DLQ move included, across a crash', () => {
    // Prepare: a run that sends three, deletes one and redrives one, then dies without closing
    const journal = openQueueJournal(file);
    journal.commit();
    journal.record(published('a'));
    journal.record(published('b'));
    journal.record(published('c', 'jobs', 3_000));
    journal.record({ service: 'sqs', queueName: 'jobs', messageId: 'a', status: 'consumed' });
    journal.record({ service: 'sqs', queueName: 'jobs', messageId: 'c', status: 'dlq' });
    journal.record(published('c', 'jobs-dlq', 9_000));
    appendFileSync(file, '{"op":"sent","q":"jobs","id":"torn'); // cut short by the crash

    // Act
    const live = readQueueJournal(file);

    // Assert
    expect(live.map((m) => [m.messageId, m.queueName, m.sentAtMs])).toEqual([
      ['b', 'jobs', 1_000],
      ['c', 'jobs-dlq', 3_000],
    ]);
    expect(live[0]).toMatchObject({ body: '{"job":"b"}', messageAttributes: { kind: { StringValue: 'cancel' } } });
  });

  it('keeps the old journal until the re-sent messages are committed, and the first send time', () => {
    // Prepare
    const first = openQueueJournal(file);
    first.commit();
    first.record(published('a', 'jobs', 500));

    // Act: the restart re-sends 'a' as 'a2'; before commit the old journal is what is on disk
    const second = openQueueJournal(file);
    second.resending(500);
    second.record(published('a2', 'jobs', 7_000));
    const beforeCommit = readQueueJournal(file).map((m) => m.messageId);
    second.commit();

    // Assert
    expect(beforeCommit).toEqual(['a']);
    expect(readQueueJournal(file).map((m) => [m.messageId, m.sentAtMs])).toEqual([['a2', 500]]);
  });

  it('compacts to the live messages', () => {
    const journal = openQueueJournal(file);
    journal.commit();
    for (let i = 0; i < 100; i += 1) {
      journal.record(published(`m${i}`));
      if (i > 0) journal.record({ service: 'sqs', messageId: `m${i}`, status: 'consumed' });
    }
    journal.compact();
    expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(1);
    expect(readQueueJournal(file).map((m) => m.messageId)).toEqual(['m0']);
    expect(journal.size()).toBe(1);
  });
});
