/**
 * The job queue across restarts. fauxqs keeps messages in memory only, so every message it accepts,
 * deletes or moves to the DLQ is appended to a journal (one JSON line) before its answer leaves:
 * the hook is fauxqs' message spy, which the queue calls synchronously inside SendMessage,
 * DeleteMessage and the redrive. A restart sends the messages not yet deleted again (SQS delivers at
 * least once; jobs are idempotent by task id), each to the queue it was in. Receive counts start
 * again at zero and a message keeps its age for retention only.
 */
import { appendFileSync, existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';

/** What fauxqs' spy reports about an SQS message (the part we use). */
export interface SpiedSqsMessage {
  readonly service: string;
  readonly queueName?: string;
  readonly messageId?: string;
  readonly body?: string;
  readonly messageAttributes?: Readonly<
    Record<string, { DataType: string; StringValue?: string; BinaryValue?: string }>
  >;
  readonly status?: string;
  readonly timestamp?: number;
}

/** A message the journal still holds. */
export interface JournaledMessage {
  readonly queueName: string;
  readonly messageId: string;
  readonly body: string;
  readonly messageAttributes: NonNullable<SpiedSqsMessage['messageAttributes']>;
  /** When it was first sent (epoch ms), kept across restarts for retention. */
  readonly sentAtMs: number;
}

type Line =
  | {
      readonly op: 'sent';
      readonly q: string;
      readonly id: string;
      readonly body: string;
      readonly attrs: JournaledMessage['messageAttributes'];
      readonly t: number;
    }
  | { readonly op: 'gone'; readonly id: string };

/** Reads a journal into the messages still live, in the order they were sent. A torn last line is ignored. */
export const readQueueJournal = (file: string): JournaledMessage[] => {
  if (!existsSync(file)) return [];
  const live = new Map<string, JournaledMessage>();
  for (const text of readFileSync(file, 'utf8').split('\n')) {
    if (!text.trim()) continue;
    let line: Line;
    try {
      line = JSON.parse(text) as Line;
    } catch {
      continue; // a write cut short by a crash: the message's sender never got its answer either
    }
    if (line.op === 'sent') {
      // A redrive re-sends the same id to the DLQ: the later line wins, and its first send time stays.
      const before = live.get(line.id);
      live.delete(line.id);
      live.set(line.id, {
        queueName: line.q,
        messageId: line.id,
        body: line.body,
        messageAttributes: line.attrs,
        sentAtMs: before?.sentAtMs ?? line.t,
      });
    } else if (line.op === 'gone') live.delete(line.id);
  }
  return [...live.values()];
};

/** A journal holding exactly `messages` (a compacted journal, or a snapshot's). */
export const queueJournalText = (messages: Iterable<JournaledMessage>): string =>
  [...messages]
    .map(
      (m) =>
        `${JSON.stringify({ op: 'sent', q: m.queueName, id: m.messageId, body: m.body, attrs: m.messageAttributes, t: m.sentAtMs } satisfies Line)}\n`,
    )
    .join('');

export interface QueueJournal {
  /** The spy hook: records one fauxqs event. Synchronous, so the record exists before the answer. */
  record(event: SpiedSqsMessage): void;
  /**
   * The next message accepted is one sent again at restart: it keeps `sentAtMs`, its first send
   * time, so retention counts from there. The re-send runs before anything else sends.
   */
  resending(sentAtMs: number): void;
  /** Rewrites the journal with the live messages only (bounded size over a long run). */
  compact(): void;
  /** Messages live now. */
  size(): number;
  /** The journal of the messages live now, compacted (what a snapshot of the state keeps). */
  text(): string;
}

/**
 * A journal written to `file`. It writes to `<file>.next` until `commit()`, which replaces the
 * previous journal atomically: call it once the messages read from the previous one are sent again.
 */
export const openQueueJournal = (file: string): QueueJournal & { commit(): void } => {
  const next = `${file}.next`;
  rmSync(next, { force: true });
  let target = next;
  const live = new Map<string, JournaledMessage>();
  let resentAt: number | undefined;
  const append = (line: Line) => appendFileSync(target, `${JSON.stringify(line)}\n`, { mode: 0o600 });
  const journal = {
    record: (event: SpiedSqsMessage) => {
      if (event.service !== 'sqs' || !event.messageId) return;
      const id = event.messageId;
      if (event.status === 'published' && event.queueName) {
        const t = live.get(id)?.sentAtMs ?? resentAt ?? event.timestamp ?? Date.now();
        resentAt = undefined;
        const message: JournaledMessage = {
          queueName: event.queueName,
          messageId: id,
          body: event.body ?? '',
          messageAttributes: event.messageAttributes ?? {},
          sentAtMs: t,
        };
        live.delete(id);
        live.set(id, message);
        append({ op: 'sent', q: message.queueName, id, body: message.body, attrs: message.messageAttributes, t });
      } else if (event.status === 'consumed') {
        live.delete(id);
        append({ op: 'gone', id });
      }
      // 'dlq' is followed by the DLQ's own 'published' of the same id, which moves it there.
    },
    resending: (sentAtMs: number) => {
      resentAt = sentAtMs;
    },
    compact: () => {
      const tmp = `${target}.compact`;
      writeFileSync(tmp, queueJournalText(live.values()), { mode: 0o600 });
      renameSync(tmp, target);
    },
    size: () => live.size,
    text: () => queueJournalText(live.values()),
    commit: () => {
      if (target === file) return;
      // Until this rename the old journal stands: a crash during the re-send loses nothing.
      if (existsSync(next)) renameSync(next, file);
      else writeFileSync(file, '', { mode: 0o600 });
      target = file;
    },
  };
  return journal;
};
