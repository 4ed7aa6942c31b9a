/**
 * Captures what the relay writes during an e2e run (issue 6, shared by the log-hygiene and access
 * leak tests): every write to process.stdout/stderr and every global console call, printing none.
 *
 * Powertools Logger (POWERTOOLS_DEV unset) prints through its own
 * `new Console({ stdout: process.stdout, stderr: process.stderr })`, so its JSON lines are caught at
 * `process.stdout.write` / `process.stderr.write`; the local runtime's `[local]`/`[api]` lines use the
 * global `console`, which jest replaces, so its methods are captured too.
 */
import { format } from 'node:util';

type Source = 'stdout' | 'stderr' | 'console';
export interface CapturedLine {
  readonly source: Source;
  readonly text: string;
}
export type LogLine = Record<string, unknown> & { readonly message?: unknown; readonly task_id?: unknown };

/** Captures every write to process.stdout/stderr and every global console call, printing none. */
export const startCapture = () => {
  const lines: CapturedLine[] = [];
  const push = (source: Source, text: string) => {
    for (const line of text.split('\n')) if (line.trim() !== '') lines.push({ source, text: line });
  };
  const restores: (() => void)[] = [];
  for (const [source, stream] of [
    ['stdout', process.stdout],
    ['stderr', process.stderr],
  ] as const) {
    // An own property on the stream object: Node's Console looks `write` up on its stream per call.
    const original = Object.getOwnPropertyDescriptor(stream, 'write');
    const write = (chunk: unknown, encodingOrCallback?: unknown, callback?: unknown): boolean => {
      push(source, typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8'));
      const done = typeof encodingOrCallback === 'function' ? encodingOrCallback : callback;
      if (typeof done === 'function') process.nextTick(done as () => void);
      return true;
    };
    Object.defineProperty(stream, 'write', { configurable: true, writable: true, value: write });
    restores.push(() => {
      if (original) Object.defineProperty(stream, 'write', original);
      else delete (stream as { write?: unknown }).write;
    });
  }
  for (const method of ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const) {
    const spy = jest
      .spyOn(console, method)
      .mockImplementation((...args: unknown[]) => push('console', format(...args)));
    restores.push(() => spy.mockRestore());
  }
  return {
    lines,
    stop: () => {
      for (const restore of restores.splice(0).reverse()) restore();
    },
  };
};

/** The structured (Powertools JSON) lines among the captured ones. */
export const relayLines = (lines: readonly CapturedLine[]): LogLine[] =>
  lines.flatMap((line) => {
    if (!line.text.startsWith('{')) return [];
    try {
      const parsed = JSON.parse(line.text) as unknown;
      return parsed !== null && typeof parsed === 'object' && 'level' in parsed && 'message' in parsed
        ? [parsed as LogLine]
        : [];
    } catch {
      return [];
    }
  });

/** `name: where` for every forbidden value found in a line (case-insensitive; values are never printed). */
export const leaks = (lines: readonly CapturedLine[], forbidden: Readonly<Record<string, string>>): string[] =>
  lines.flatMap((line, index) =>
    Object.entries(forbidden)
      .filter(([, value]) => line.text.toLowerCase().includes(value.toLowerCase()))
      .map(([name]) => `${name} in ${line.source} line ${index}: ${line.text.slice(0, 120)}…`),
  );

/**
 * Runs `work` with every write captured; returns the structured lines it wrote, in order (the logger
 * writes them when its level lets it: test/helpers/debug-logs.ts).
 */
export const loggedLines = async (work: () => Promise<unknown>): Promise<LogLine[]> => {
  const capture = startCapture();
  try {
    await work();
  } finally {
    capture.stop();
  }
  return relayLines(capture.lines);
};
