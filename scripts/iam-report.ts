/**
 * `npm run iam:report [counts file]`: per function, every statement of its role (and its Lambda
 * permissions) and how many calls of the counted runs it allowed (local/iam-report.ts). Count a run with
 *   IAM_CHECKS_COUNTS=$PWD/.iam-counts.jsonl npx jest --selectProjects e2e e2e-live
 * (or any e2e files), then run this. Exits 1 when a statement no local test can reach is left
 * unexercised, so a grant nothing proves is seen.
 */
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { formatReport, readCounts, statementRows, summarize } from '../local/iam-report';
import { synthesizeStackModel } from '../local/stack-model';

const file = path.resolve(process.argv[2] ?? process.env.IAM_CHECKS_COUNTS ?? '.iam-counts.jsonl');
if (!existsSync(file)) {
  console.error(
    `iam:report: no counts at ${file}. Run e2e tests with IAM_CHECKS_COUNTS=${file} first (docs/local-runtime.md "Permission checks").`,
  );
  process.exit(2);
}
const lines = readCounts(file);
const rows = statementRows(synthesizeStackModel(), lines);
console.log(formatReport(rows, lines));
process.exitCode = summarize(rows).unexercised.length > 0 ? 1 : 0;
