/**
 * A local Step Functions service for `npm start` and the workflow tests: executions of the
 * synthesized ASL run in-process with aws-local-stepfunctions, Task states call the unchanged
 * Lambda handlers, and an HTTP listener speaks the Step Functions JSON 1.0 protocol (StartExecution,
 * DescribeExecution, StopExecution), so the SDK-based SfnWorkflowStarter works against it through
 * AWS_ENDPOINT_URL_SFN. Executions that end FAILED, TIMED_OUT or ABORTED produce the EventBridge
 * "Step Functions Execution Status Change" event the AWS rule would deliver.
 */
import { randomUUID } from 'node:crypto';
import { appendFileSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  ExecutionAbortedError,
  ExecutionTimeoutError,
  StateMachine,
  type StateMachineDefinition,
} from 'aws-local-stepfunctions';

// aws-local-stepfunctions calls Promise.withResolvers (Node ≥ 22). Without it on Node 20 every Task
// throws a TypeError that the state machine's Retry/Catch swallows, so failures look like business ones.
// The relay runs on Node 24 (contract/runtime.ts), where this is a no-op; it stays only until no
// checkout still runs its tests on an older system Node.
const promiseCtor = Promise as unknown as { withResolvers?: () => unknown };
if (typeof promiseCtor.withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    value: function withResolvers<T>() {
      let resolve!: (value: T | PromiseLike<T>) => void;
      let reject!: (reason?: unknown) => void;
      const promise = new Promise<T>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      return { promise, resolve, reject };
    },
  });
}

export type ExecutionStatus = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'ABORTED';

/** DescribeExecution's answer (dates as Date; the HTTP layer sends epoch seconds like AWS). */
export interface ExecutionDescription {
  readonly executionArn: string;
  readonly stateMachineArn: string;
  readonly name: string;
  readonly status: ExecutionStatus;
  readonly startDate: Date;
  readonly stopDate?: Date;
  readonly input: string;
  readonly output?: string;
  readonly error?: string;
  readonly cause?: string;
}

/** The EventBridge event of an execution that ended FAILED, TIMED_OUT or ABORTED. */
export interface ExecutionStatusChangeEvent {
  readonly version: '0';
  readonly id: string;
  readonly 'detail-type': 'Step Functions Execution Status Change';
  readonly source: 'aws.states';
  readonly account: string;
  readonly time: string;
  readonly region: string;
  readonly resources: readonly string[];
  readonly detail: {
    readonly executionArn: string;
    readonly stateMachineArn: string;
    readonly name: string;
    readonly status: 'FAILED' | 'TIMED_OUT' | 'ABORTED';
    readonly startDate: number;
    readonly stopDate: number;
    readonly input: string;
    readonly output: null;
    readonly error: string | null;
    readonly cause: string | null;
  };
}

export interface LocalStepFunctionsOptions {
  /** The ASL (e.g. from synthesizeWorkflowAsl()). */
  readonly asl: object;
  /** Task state name → handler (the Lambda handler: state input in, JSON out). */
  readonly handlers: Readonly<Record<string, (input: unknown) => Promise<unknown>>>;
  /** Called like the EventBridge rule for FAILED / TIMED_OUT / ABORTED executions. */
  readonly onExecutionEnded?: (event: ExecutionStatusChangeEvent) => Promise<unknown>;
  /** Wait state name → milliseconds, instead of the definition's duration (tests). @default - real durations */
  readonly waitTimeOverrides?: Readonly<Record<string, number>>;
  /** State name → retry delay in ms (tests). @default - the definition's intervals */
  readonly retryIntervalOverrides?: Readonly<Record<string, number | number[]>>;
  /** Replaces the definition's TimeoutSeconds (tests of the hard limit). @default - the definition's */
  readonly timeoutSeconds?: number;
  /** @default arn:aws:states:us-east-1:000000000000:stateMachine:OrderWorkflow */
  readonly stateMachineArn?: string;
  /** Where failures of onExecutionEnded go. @default console.error */
  readonly onError?: (message: string, error: unknown) => void;
  /**
   * A journal of executions started and ended, kept across restarts: `resume()` carries on those
   * that had not ended. @default - memory only
   */
  readonly journalFile?: string;
}

/** How long an ended execution's name stays taken (Step Functions keeps it 90 days). */
const ENDED_NAME_KEPT_MS = 90 * 24 * 3600 * 1000;

type JournalLine =
  | { readonly op: 'start'; readonly name: string; readonly input: string; readonly startDate: number }
  | { readonly op: 'end'; readonly name: string; readonly status: ExecutionStatus; readonly stopDate: number }
  | { readonly op: 'state'; readonly name: string; readonly state: string };

interface JournaledExecution {
  readonly name: string;
  readonly input: string;
  readonly startDate: number;
  end?: { readonly status: ExecutionStatus; readonly stopDate: number };
  /** The last Task state entered. */
  state?: string;
}

/** What `resume()` did with the executions a previous run left running. */
export interface ResumeOutcome {
  /** Run again from their start under the same name. */
  readonly resumed: readonly string[];
  /** Past their TimeoutSeconds while stopped: ended TIMED_OUT through onExecutionEnded. */
  readonly timedOut: readonly string[];
}

/** A StartExecution name already used (AWS's error name, which the SDK surfaces). */
export class ExecutionAlreadyExistsError extends Error {
  public constructor(name: string) {
    super(`Execution Already Exists: '${name}'`);
    this.name = 'ExecutionAlreadyExists';
  }
}

/** An unknown execution ARN. */
export class ExecutionDoesNotExistError extends Error {
  public constructor(arn: string) {
    super(`Execution Does Not Exist: '${arn}'`);
    this.name = 'ExecutionDoesNotExist';
  }
}

interface Execution {
  description: ExecutionDescription;
  abort: () => void;
  done: Promise<ExecutionDescription>;
  /** Set when the runtime aborts it at its deadline (a resumed execution keeps its first start's). */
  timedOut?: boolean;
}

/**
 * The error a Task sees when a Lambda function throws: Error = errorType, Cause = the JSON Lambda
 * returns ({errorType, errorMessage, trace}), so Catch outputs look exactly as in AWS.
 */
class LambdaFunctionError extends Error {
  public constructor(errorType: string, errorMessage: string) {
    super(JSON.stringify({ errorType, errorMessage, trace: [] }));
    this.name = errorType;
  }
}

const asLambda =
  (fn: (input: unknown) => Promise<unknown>) =>
  async (input: unknown): Promise<never | object | null> => {
    let output: unknown;
    try {
      output = await fn(input);
    } catch (error) {
      const e = error instanceof Error ? error : new Error(String(error));
      throw new LambdaFunctionError(e.name || 'Error', e.message);
    }
    // Lambda payloads are JSON: drop undefined and class instances the way the service would.
    return output === undefined ? null : (JSON.parse(JSON.stringify(output)) as object);
  };

const parseCause = (error: unknown): { error: string; cause: string } => {
  const inner = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  if (inner instanceof Error) return { error: inner.name, cause: inner.message };
  return { error: 'States.Runtime', cause: String(inner) };
};

/** In-process Step Functions for one state machine. */
export class LocalStepFunctions {
  public readonly stateMachineArn: string;
  private readonly machine: StateMachine;
  private readonly executions = new Map<string, Execution>();
  private readonly region: string;
  private readonly account: string;
  private closing = false;
  private readonly journal = new Map<string, JournaledExecution>();
  private readonly timeoutSeconds: number | undefined;

  public constructor(private readonly opts: LocalStepFunctionsOptions) {
    this.stateMachineArn = opts.stateMachineArn ?? 'arn:aws:states:us-east-1:000000000000:stateMachine:OrderWorkflow';
    const [, , , region, account] = this.stateMachineArn.split(':');
    this.region = region || 'us-east-1';
    this.account = account || '000000000000';
    const definition = { ...(opts.asl as StateMachineDefinition) };
    if (opts.timeoutSeconds !== undefined) definition.TimeoutSeconds = opts.timeoutSeconds;
    // QueryLanguage is a newer top-level field the library's validator does not know; JSONPath is its only language.
    delete (definition as { QueryLanguage?: string }).QueryLanguage;
    this.machine = new StateMachine(definition, { validationOptions: { checkArn: false } });
    this.timeoutSeconds = definition.TimeoutSeconds;
    if (opts.journalFile) this.loadJournal(opts.journalFile);
  }

  /**
   * Carries on the executions a previous run left running: each runs again from its start under
   * its name and input (the workflow's steps are idempotent per task), with the deadline of its
   * first start; one already past it ends TIMED_OUT through onExecutionEnded, as in AWS.
   */
  public resume(now: Date = new Date()): ResumeOutcome {
    const resumed: string[] = [];
    const timedOut: string[] = [];
    for (const record of [...this.journal.values()]) {
      if (record.end) continue;
      const deadline = this.timeoutSeconds === undefined ? undefined : record.startDate + this.timeoutSeconds * 1_000;
      if (deadline !== undefined && deadline <= now.getTime()) {
        const execution = this.track(record.name, record.input, new Date(record.startDate), { abort: () => undefined });
        void this.settle(execution, {
          status: 'TIMED_OUT',
          error: 'States.Timeout',
          cause: `the relay was stopped past the deadline while the task was in state ${record.state ?? 'unknown'}`,
        });
        timedOut.push(record.name);
      } else {
        this.run(record.name, record.input, new Date(record.startDate), deadline);
        resumed.push(record.name);
      }
    }
    return { resumed, timedOut };
  }

  private loadJournal(file: string): void {
    if (existsSync(file)) {
      for (const text of readFileSync(file, 'utf8').split('\n')) {
        if (!text.trim()) continue;
        let line: JournalLine;
        try {
          line = JSON.parse(text) as JournalLine;
        } catch {
          continue; // torn by a crash mid-write: its StartExecution never answered
        }
        this.apply(line);
      }
    }
    // Compacted at every start: running ones, and ended names still taken.
    const cutoff = Date.now() - ENDED_NAME_KEPT_MS;
    for (const [name, record] of this.journal)
      if (record.end && record.end.stopDate < cutoff) this.journal.delete(name);
    writeFileSync(`${file}.next`, this.journalText(), { mode: 0o600 });
    renameSync(`${file}.next`, file);
  }

  /**
   * The journal as it stands, compacted: every execution still running (with the last Task state it
   * entered) and every ended name still taken. What a snapshot of the state keeps.
   */
  public journalText(): string {
    return [...this.journal.values()]
      .flatMap((r): JournalLine[] => [
        { op: 'start', name: r.name, input: r.input, startDate: r.startDate },
        ...(r.state && !r.end ? [{ op: 'state' as const, name: r.name, state: r.state }] : []),
        ...(r.end ? [{ op: 'end' as const, name: r.name, status: r.end.status, stopDate: r.end.stopDate }] : []),
      ])
      .map((l) => `${JSON.stringify(l)}\n`)
      .join('');
  }

  private append(line: JournalLine): void {
    if (!this.opts.journalFile) return;
    appendFileSync(this.opts.journalFile, `${JSON.stringify(line)}\n`, { mode: 0o600 });
    this.apply(line);
  }

  private apply(line: JournalLine): void {
    if (line.op === 'start') {
      this.journal.set(line.name, { name: line.name, input: line.input, startDate: line.startDate });
      return;
    }
    const record = this.journal.get(line.name);
    if (!record) return;
    if (line.op === 'state') record.state = line.state;
    else record.end = { status: line.status, stopDate: line.stopDate };
  }

  /** Notes the Task state an execution entered (once per change: a polling loop writes one line). */
  private entered(name: string, state: string): void {
    if (!this.opts.journalFile || this.closing || this.journal.get(name)?.state === state) return;
    this.append({ op: 'state', name, state });
  }

  /** Starts an execution named `name`. Same name and input while running: the same execution (AWS behaviour). */
  public startExecution(name: string, input: unknown = {}): { executionArn: string; startDate: Date } {
    const inputText = typeof input === 'string' ? input : JSON.stringify(input);
    const executionArn = this.arnOf(name);
    const existing = this.executions.get(executionArn);
    if (existing) {
      if (existing.description.status === 'RUNNING' && existing.description.input === inputText) {
        return { executionArn, startDate: existing.description.startDate };
      }
      throw new ExecutionAlreadyExistsError(name);
    }
    if (this.journal.get(name)?.end) throw new ExecutionAlreadyExistsError(name);
    if (this.closing) throw new Error('local Step Functions is closed');
    JSON.parse(inputText); // a bad input is refused before anything is recorded
    const startDate = new Date();
    // Recorded before the answer: a crash after it cannot lose a started execution.
    this.append({ op: 'start', name, input: inputText, startDate: startDate.getTime() });
    this.run(name, inputText, startDate, undefined);
    return { executionArn, startDate };
  }

  private arnOf(name: string): string {
    return `arn:aws:states:${this.region}:${this.account}:execution:${this.stateMachineArn.split(':').pop()}:${name}`;
  }

  private track(name: string, inputText: string, startDate: Date, run: { abort: () => void }): Execution {
    const executionArn = this.arnOf(name);
    const execution: Execution = {
      description: {
        executionArn,
        stateMachineArn: this.stateMachineArn,
        name,
        status: 'RUNNING',
        startDate,
        input: inputText,
      },
      abort: run.abort,
      done: Promise.resolve() as unknown as Promise<ExecutionDescription>,
    };
    this.executions.set(executionArn, execution);
    return execution;
  }

  /** Runs the machine for an execution; `deadlineMs` (epoch) ends it TIMED_OUT earlier than the definition would. */
  private run(name: string, inputText: string, startDate: Date, deadlineMs: number | undefined): Execution {
    const parsedInput = JSON.parse(inputText) as Parameters<StateMachine['run']>[0];
    const taskResourceLocalHandlers = Object.fromEntries(
      Object.entries(this.opts.handlers).map(([state, fn]) => [
        state,
        asLambda(async (input: unknown) => {
          this.entered(name, state);
          return fn(input);
        }),
      ]),
    );
    const run = this.machine.run(parsedInput, {
      overrides: {
        taskResourceLocalHandlers: taskResourceLocalHandlers as NonNullable<
          NonNullable<Parameters<StateMachine['run']>[1]>['overrides']
        >['taskResourceLocalHandlers'],
        waitTimeOverrides: this.opts.waitTimeOverrides ? { ...this.opts.waitTimeOverrides } : undefined,
        retryIntervalOverrides: this.opts.retryIntervalOverrides ? { ...this.opts.retryIntervalOverrides } : undefined,
      },
    });
    const execution = this.track(name, inputText, startDate, run);
    let deadline: NodeJS.Timeout | undefined;
    if (deadlineMs !== undefined) {
      deadline = setTimeout(
        () => {
          execution.timedOut = true;
          run.abort();
        },
        Math.max(0, deadlineMs - Date.now()),
      );
      deadline.unref();
    }
    execution.done = run.result.then(
      (output) => this.settle(execution, { status: 'SUCCEEDED', output: JSON.stringify(output) }),
      (error: unknown) => {
        if (error instanceof ExecutionTimeoutError || (error instanceof ExecutionAbortedError && execution.timedOut))
          // AWS's status-change event of a timeout carries no cause.
          return this.settle(execution, { status: 'TIMED_OUT', error: 'States.Timeout' });
        if (error instanceof ExecutionAbortedError) return this.settle(execution, { status: 'ABORTED' });
        return this.settle(execution, { status: 'FAILED', ...parseCause(error) });
      },
    );
    void execution.done.finally(() => clearTimeout(deadline));
    return execution;
  }

  /** The execution's current description. */
  public describeExecution(executionArn: string): ExecutionDescription {
    const execution = this.executions.get(executionArn);
    if (!execution) throw new ExecutionDoesNotExistError(executionArn);
    return execution.description;
  }

  /** Resolves once the execution ended (and its onExecutionEnded callback, if any, finished). */
  public waitForExecution(executionArn: string): Promise<ExecutionDescription> {
    const execution = this.executions.get(executionArn);
    if (!execution) return Promise.reject(new ExecutionDoesNotExistError(executionArn));
    return execution.done;
  }

  /** Aborts a running execution (StopExecution). */
  public stopExecution(executionArn: string): { stopDate: Date } {
    const execution = this.executions.get(executionArn);
    if (!execution) throw new ExecutionDoesNotExistError(executionArn);
    if (execution.description.status === 'RUNNING') execution.abort();
    return { stopDate: new Date() };
  }

  /** Starts the Step Functions JSON 1.0 endpoint on 127.0.0.1 (port 0 = any free port). */
  public async listen(port = 0): Promise<{ endpoint: string; close: () => Promise<void> }> {
    const server = createServer((req, res) => {
      void this.serve(req, res);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    const { port: bound } = server.address() as AddressInfo;
    return {
      endpoint: `http://127.0.0.1:${bound}`,
      close: () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    };
  }

  /** Aborts every running execution without the ended callbacks (shutdown), and waits for them. */
  public async close(): Promise<void> {
    this.closing = true;
    const running = [...this.executions.values()].filter((e) => e.description.status === 'RUNNING');
    for (const e of running) e.abort();
    await Promise.allSettled(running.map((e) => e.done));
  }

  private async settle(
    execution: Execution,
    end: { status: Exclude<ExecutionStatus, 'RUNNING'>; output?: string; error?: string; cause?: string },
  ): Promise<ExecutionDescription> {
    const stopDate = new Date();
    execution.description = { ...execution.description, ...end, stopDate };
    const d = execution.description;
    if (end.status !== 'SUCCEEDED' && this.opts.onExecutionEnded && !this.closing) {
      const event: ExecutionStatusChangeEvent = {
        version: '0',
        id: randomUUID(),
        'detail-type': 'Step Functions Execution Status Change',
        source: 'aws.states',
        account: this.account,
        time: stopDate.toISOString(),
        region: this.region,
        resources: [d.executionArn],
        detail: {
          executionArn: d.executionArn,
          stateMachineArn: d.stateMachineArn,
          name: d.name,
          status: end.status,
          startDate: d.startDate.getTime(),
          stopDate: stopDate.getTime(),
          input: d.input,
          output: null,
          error: end.error ?? null,
          cause: end.cause ?? null,
        },
      };
      try {
        await this.opts.onExecutionEnded(event);
      } catch (error) {
        (this.opts.onError ?? ((message, err) => console.error(message, err)))('execution-ended handler failed', error);
      }
    }
    // Recorded once the safety net ran (at least once across a crash); an execution aborted by
    // shutdown is not ended: the next start carries it on.
    if (!this.closing) this.append({ op: 'end', name: d.name, status: end.status, stopDate: stopDate.getTime() });
    return d;
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/x-amz-json-1.0' });
      res.end(JSON.stringify(body));
    };
    const fail = (status: number, type: string, message: string) => {
      res.setHeader('x-amzn-errortype', type);
      send(status, { __type: `com.amazonaws.states#${type}`, message });
    };
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      if (req.method !== 'POST') return fail(405, 'UnknownOperationException', 'POST only');
      const target = String(req.headers['x-amz-target'] ?? '');
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      const seconds = (d: Date | undefined) => (d ? d.getTime() / 1000 : undefined);
      const str = (v: unknown, field: string): string => {
        if (typeof v !== 'string' || v.length === 0)
          throw Object.assign(new Error(`${field} is required`), { name: 'InvalidArn' });
        return v;
      };
      switch (target) {
        case 'AWSStepFunctions.StartExecution': {
          const started = this.startExecution(
            typeof body.name === 'string' && body.name ? body.name : randomUUID(),
            typeof body.input === 'string' ? body.input : '{}',
          );
          return send(200, { executionArn: started.executionArn, startDate: seconds(started.startDate) });
        }
        case 'AWSStepFunctions.DescribeExecution': {
          const d = this.describeExecution(str(body.executionArn, 'executionArn'));
          return send(200, { ...d, startDate: seconds(d.startDate), stopDate: seconds(d.stopDate) });
        }
        case 'AWSStepFunctions.StopExecution': {
          const stopped = this.stopExecution(str(body.executionArn, 'executionArn'));
          return send(200, { stopDate: seconds(stopped.stopDate) });
        }
        default:
          return fail(400, 'UnknownOperationException', `unsupported operation ${target}`);
      }
    } catch (error) {
      if (
        error instanceof ExecutionAlreadyExistsError ||
        error instanceof ExecutionDoesNotExistError ||
        (error instanceof Error && error.name === 'InvalidArn')
      ) {
        return fail(400, error.name, error.message);
      }
      if (error instanceof SyntaxError) return fail(400, 'InvalidExecutionInput', error.message);
      return fail(500, 'InternalFailure', error instanceof Error ? error.message : String(error));
    }
  }
}
