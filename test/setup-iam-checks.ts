/**
 * e2e projects: a test fails when the local runtime's IAM checks refused a call while it ran
 * (IAM_CHECKS=enforce, test/setup-env.ts). The handler's own error path already runs; this also
 * catches a denial a handler swallows (a best-effort write), naming action, resource and role.
 */
import * as path from 'node:path';

const CHECKER = Symbol.for('gpu-relay.local.iam-checker');

interface DenialSource {
  denials(): readonly { readonly message: string }[];
}

const seen = new WeakMap<object, number>();

afterEach(() => {
  const checker = (globalThis as Record<symbol, unknown>)[CHECKER] as DenialSource | undefined;
  if (!checker) return;
  const denials = checker.denials();
  const from = seen.get(checker) ?? 0;
  seen.set(checker, denials.length);
  const fresh = denials.slice(from);
  if (fresh.length > 0) {
    const distinct = [...new Set(fresh.map((d) => `AccessDeniedException: ${d.message}`))];
    throw new Error(
      `the stack's IAM policies refused ${fresh.length} call(s) during this test:\n${distinct.join('\n')}`,
    );
  }
});

// Names this file (and the live-dialect project) in the statement counts (IAM_CHECKS_COUNTS, npm run iam:report).
process.env.IAM_CHECKS_SOURCE =
  path.relative(process.cwd(), expect.getState().testPath ?? '') +
  (process.env.MARKETPLACE_DIALECT === 'live' ? '#live' : '');
