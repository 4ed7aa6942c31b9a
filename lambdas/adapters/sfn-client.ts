/**
 * The shared Step Functions client, in a module of its own rather than beside the other clients in
 * aws-clients.ts: a function that starts workflows only on a rare path (the job worker's price alert,
 * the fleet watch's replacements and standing orders) loads it from a lazy chunk (lazy-from-env.ts),
 * which a static import of `@aws-sdk/client-sfn` from aws-clients.ts would put back in every cold start.
 */
import { SFNClient } from '@aws-sdk/client-sfn';
import { awsClientConfig } from './aws-clients';
import { traceClient } from './observability';

let sfn: SFNClient | undefined;

/** The shared Step Functions client. */
export const sfnClient = (): SFNClient => {
  sfn ??= traceClient(new SFNClient(awsClientConfig()));
  return sfn;
};
