import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { annotateTrace, bundleWithMap, HANDLER_ENTRIES, resolveEntry } from '../../../scripts/stack';
import { JOB_WORKER_ENTRY } from '../../../contract/routes';

const run = promisify(execFile);

describe('npm run stack (scripts/stack.ts)', () => {
  it('names one entry from a unique part of it, and refuses an ambiguous or unknown name', () => {
    expect(resolveEntry('job-worker')).toBe(JOB_WORKER_ENTRY);
    expect(resolveEntry(JOB_WORKER_ENTRY)).toBe(JOB_WORKER_ENTRY);
    expect(resolveEntry('api/cancel-order')).toBe('lambdas/handlers/api/cancel-order.ts');
    expect(() => resolveEntry('api/')).toThrow(/matches several entries/);
    expect(() => resolveEntry('no-such-function')).toThrow(/no function entry matches/);
    expect(HANDLER_ENTRIES).toContain('lambdas/handlers/watch/fleet-watch.ts');
  });

  it('maps a real stack trace of the deployed bundle (no source map in it) back to the source line that threw', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'relay-stack-'));
    try {
      const { code, chunks, map } = await bundleWithMap(JOB_WORKER_ENTRY);
      expect(code).not.toMatch(/sourceMappingURL/);
      const file = path.join(dir, 'index.mjs');
      writeFileSync(file, code);
      for (const [name, text] of Object.entries(chunks)) writeFileSync(path.join(dir, name), text);
      // The worker reads its environment on the first call: without TABLE_NAME it throws from env.ts.
      const script = `import(${JSON.stringify(file)}).then((m) => m.handler({ Records: [] }, {})).then(() => console.log('no error'), (e) => console.log(JSON.stringify({ stack: e.stack })))`;
      const { stdout } = await run(process.execPath, ['-e', script], {
        env: { PATH: process.env.PATH, POWERTOOLS_LOG_LEVEL: 'SILENT' },
      });
      const logged = stdout.trim().split('\n').pop() ?? '';
      // Pasted as a JSON log line, escapes and all.
      expect(logged).toMatch(/index\.mjs:\d+:\d+/);
      const annotated = annotateTrace(logged, map);
      expect(annotated).toMatch(/index\.mjs:\d+:\d+ → lambdas\/adapters\/env\.ts:\d+:\d+/);
      expect(annotated).toMatch(/→ lambdas\/handlers\/worker\/job-worker\.ts:\d+:\d+/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('leaves a position it cannot place as it is', async () => {
    const { map } = await bundleWithMap('lambdas/handlers/api/health.ts');
    expect(annotateTrace('at x (index.mjs:99999:1)', map)).toBe('at x (index.mjs:99999:1)');
  }, 60_000);
});
