/**
 * The Node.js the relay runs on. Lambda runs the functions on `LAMBDA_NODE_RUNTIME`; everything
 * that runs the same handlers elsewhere (`npm start`, the tests, CI, the CDK app that bundles them)
 * runs on the same major: package.json pins it (`engines`, the node-linux-* binary packages that
 * `npm run setup` installs from the npm registry as node_modules/.bin/node, `@types/node`), and
 * test/unit/node-runtime.test.ts fails when any of them, or the Node running the tests, differs.
 * Moving to a new major: change it here and in package.json, then `npm run setup`.
 */

/** The Node.js major of Lambda's runtime, and of every local run. */
export const NODE_MAJOR = 24;

/** Lambda's runtime identifier (aws-cdk-lib `Runtime.NODEJS_24_X`). */
export const LAMBDA_NODE_RUNTIME = `nodejs${NODE_MAJOR}.x` as const;

/** esbuild's target for the Lambda bundles. */
export const NODE_BUNDLE_TARGET = `node${NODE_MAJOR}` as const;
