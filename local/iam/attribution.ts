/**
 * Attributing calls to a function (issue 30): handlers share one process, so each invocation runs
 * inside an AsyncLocalStorage scope naming its function (FunctionScope), and an SDK middleware asks
 * the runtime's checker about every call, made in whichever scope it is. Clients reach the middleware
 * through the hook `traceClient` runs (lambdas/adapters/observability.ts), a no-op in Lambda.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { StackModel } from '../stack-model';

/** Which function the current async context runs as. */
export class FunctionScope {
  private readonly scope = new AsyncLocalStorage<string>();

  /** Runs `work` as the function `name`: every SDK call made inside is attributed to it. */
  public run<T>(name: string, work: () => T): T {
    return this.scope.run(name, work);
  }

  /** The function the current async context runs as; undefined outside any invocation. */
  public current(): string | undefined {
    return this.scope.getStore();
  }
}

/** What the SDK middleware asks of the runtime's checker (./checker.ts). */
export interface CallCheck {
  /** Checks one SDK call of the function the current scope names. */
  checkCall(service: string, command: string, input: Record<string, unknown>): Promise<void>;
}

const CHECKER = Symbol.for('gpu-relay.local.iam-checker');
const CLIENT_HOOK = Symbol.for('gpu-relay.aws-client-hook');
type Slots = Record<symbol, unknown>;

interface MiddlewareClient {
  readonly middlewareStack: {
    add: (
      middleware: (
        next: (args: { input: unknown }) => Promise<unknown>,
        context: { clientName?: string; commandName?: string },
      ) => (args: { input: unknown }) => Promise<unknown>,
      options: { step: 'serialize'; priority: 'high'; name: string; override: boolean },
    ) => void;
  };
}

/**
 * Adds the check to an SDK client: before serialization (so after lib-dynamodb marshalled the
 * input), the call is checked by the checker of the runtime running at that moment, if any.
 */
export const addIamMiddleware = (client: unknown): void => {
  const stack = (client as Partial<MiddlewareClient>).middlewareStack;
  if (!stack) return;
  stack.add(
    (next, context) => async (args) => {
      const checker = (globalThis as Slots)[CHECKER] as CallCheck | undefined;
      if (checker) {
        const service = (context.clientName ?? '').replace(/Client$/, '');
        await checker.checkCall(
          service,
          context.commandName ?? 'Unknown',
          (args.input ?? {}) as Record<string, unknown>,
        );
      }
      return next(args);
    },
    { step: 'serialize', priority: 'high', name: 'localIamCheck', override: true },
  );
};

/** Every client a handler builds from now on (traceClient) gets the check middleware. */
export const installClientHook = (): void => {
  (globalThis as Slots)[CLIENT_HOOK] = addIamMiddleware;
};

/** Makes `checker` the one every hooked client consults; returns the undo. */
export const activateChecker = (checker: CallCheck): (() => void) => {
  const slots = globalThis as Slots;
  installClientHook();
  slots[CHECKER] = checker;
  return () => {
    if (slots[CHECKER] === checker) delete slots[CHECKER];
  };
};

/** The function (stack model name) whose handler is `entry`. */
export const functionOfEntry = (model: StackModel, entry: string): string => {
  const fn = model.functions.find((f) => f.entry === entry);
  if (!fn) throw new Error(`local IAM checks: no function of the stack runs ${entry}`);
  return fn.name;
};
