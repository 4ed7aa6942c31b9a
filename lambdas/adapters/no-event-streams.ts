/**
 * Stands in for `@smithy/core/event-streams` inside the Lambda bundles (esbuild alias in
 * lib/constructs/relay-bundling.ts). Smithy's HttpProtocol loads that module with a dynamic
 * `import()` only for an operation with an event-stream member; esbuild bundles it anyway (~15 KB of
 * codec and marshaller code). None of the relay's clients (DynamoDB, SQS, Step Functions, Secrets
 * Manager) has such an operation, so in a bundle it is never loaded; should one ever be called, it
 * fails loudly here instead of silently.
 *
 * Only bundles see this module: jest, `npm start` and the CDK app import the real one.
 */
const unavailable = (): never => {
  throw new Error('AWS event streams are not bundled into the relay functions (lambdas/adapters/no-event-streams.ts)');
};

export class EventStreamSerde {
  public constructor() {
    unavailable();
  }
}

export const eventStreamSerdeProvider = (): never => unavailable();
