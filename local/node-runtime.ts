/**
 * `npm start` runs the handlers on the Node.js major Lambda runs them on (contract/runtime.ts), or
 * not at all: a relay that passes here on another major proves nothing about the deployed one.
 */
import { LAMBDA_NODE_RUNTIME, NODE_MAJOR } from '../contract/runtime';

/** Why `version` (a `process.versions.node`) cannot stand in for Lambda's Node, or undefined when it can. */
export const nodeRuntimeMismatch = (version: string): string | undefined => {
  const major = Number(version.split('.')[0]);
  if (major === NODE_MAJOR) return undefined;
  return (
    `Node ${version} is running, but the functions run on ${LAMBDA_NODE_RUNTIME} in Lambda. ` +
    `Install with \`npm run setup\` (it puts Node ${NODE_MAJOR} from the npm registry in node_modules/.bin), ` +
    'then start through npm (`npm start`), which runs that Node.'
  );
};
