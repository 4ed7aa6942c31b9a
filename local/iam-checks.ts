/**
 * Permission checks of the local runtime (issue 30): every AWS SDK call a handler makes is evaluated,
 * before it reaches dynalite, fauxqs or local Step Functions, against the synthesized stack's
 * policies for the function that made it (its role's identity policies with their conditions, and
 * the resource policies the template holds), with @cloud-copilot/iam-simulate. The Step Functions
 * role invoking a task function, API Gateway and EventBridge invoking a function (its Lambda
 * permissions) and the SQS event source mapping (the worker's role) are checked the same way.
 *
 * This file wires the checks into the runtime (startIamChecks). The concerns live in local/iam/:
 * reading the template (policy-model.ts), evaluating a call (call-requests.ts: the IAM requests of an
 * SDK call; evaluation.ts: their decision, memoized), attributing calls to a function
 * (attribution.ts: one AsyncLocalStorage scope per invocation, the SDK middleware), reporting
 * (report.ts: IAM_CHECKS `enforce` / `report` / `off`, the denials, the counts file), and the checker
 * that composes them (checker.ts).
 */
import { activateChecker, addIamMiddleware, installClientHook } from './iam/attribution';
import { IamChecker } from './iam/checker';
import { STATE_MACHINE_PRINCIPAL } from './iam/policy-model';
import type { IamMode } from './iam/report';
import type { LocalNames, StackModel } from './stack-model';

// What local/runtime.ts takes from here besides startIamChecks.
export { functionOfEntry } from './iam/attribution';
export { parseIamMode, type IamDenial, type IamMode } from './iam/report';

type Invocation = (event: unknown, ...rest: never[]) => Promise<unknown>;

export interface LocalIamChecksOptions extends LocalNames {
  readonly log: (message: string) => void;
  readonly countsFile?: string;
}

/**
 * The checks of one runtime, as wrappers of the ways AWS invokes the functions: `route` (API Gateway,
 * through the function's Lambda permission), `task` (the state machine's role), `rule` (EventBridge,
 * through the Lambda permission), `runAs` (the SQS event source mapping runs with the worker's role).
 */
export const startIamChecks = (model: StackModel, mode: IamMode, opts: LocalIamChecksOptions) => {
  const checker = new IamChecker({ model, local: opts, mode, log: opts.log, countsFile: opts.countsFile });
  const deactivate = mode === 'off' ? (installClientHook(), () => undefined) : activateChecker(checker);
  const arnOf = (name: string) => checker.policies.functionArns.get(name) as string;
  return {
    checker,
    denials: () => checker.denials(),
    runAs: <T>(name: string, work: () => T): T => checker.runAs(name, work),
    attachTo: (client: unknown) => addIamMiddleware(client),
    route: <H extends Invocation>(
      route: { readonly id: string; readonly method: string; readonly path: string },
      handler: H,
    ): H =>
      (async (event: unknown, ...rest: never[]) => {
        const name = `Api${route.id}`;
        // API Gateway names the route as declared (path parameters as {name}), not the request's path.
        const sourceArn = `arn:aws:execute-api:us-east-1:000000000000:${checker.policies.httpApiId}/$default/${route.method}${route.path}`;
        await checker.authorizeInvoke('apigateway.amazonaws.com', name, sourceArn);
        return checker.runAs(name, () => handler(event, ...rest));
      }) as H,
    task: <H extends Invocation>(name: string, handler: H): H =>
      (async (event: unknown, ...rest: never[]) => {
        await checker.authorize(STATE_MACHINE_PRINCIPAL, {
          action: 'lambda:InvokeFunction',
          resource: arnOf(name),
          context: {},
        });
        return checker.runAs(name, () => handler(event, ...rest));
      }) as H,
    rule: <H extends Invocation>(name: string, handler: H): H =>
      (async (event: unknown, ...rest: never[]) => {
        const rule =
          checker.policies.rulesTargeting.get(name)?.[0] ??
          `arn:aws:events:us-east-1:000000000000:rule/(none targets ${name})`;
        await checker.authorizeInvoke('events.amazonaws.com', name, rule);
        return checker.runAs(name, () => handler(event, ...rest));
      }) as H,
    close: async () => {
      checker.flush();
      deactivate();
    },
  };
};
