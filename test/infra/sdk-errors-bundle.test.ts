/**
 * The bundles' SDK trims (lib/constructs/relay-bundling.ts, relayEsbuildPlugins) change no error the
 * relay or the SDK's retries read: a probe bundle built with the relay's options and one built
 * without the plugins provoke the same DynamoDB errors on a real dynalite and read the same name,
 * message, fault and status; only an error the relay does not tell apart by class (ResourceInUse)
 * is the client's ServiceException instead of its own class. And the trims do take effect.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { REPO_ROOT } from '../../lib/constructs/relay-function';
import { KEPT_SDK_ERRORS, relayBuildOptions } from '../../lib/constructs/relay-bundling';
import { startDynalite, type LocalDynamo } from '../helpers/dynalite';

const PROBE = path.join(REPO_ROOT, 'test', 'infra', 'fixtures', 'sdk-errors-probe.ts');

type Outcome = Record<string, Record<string, unknown>>;

/** Every .ts file under `dir`, tests excluded. */
const sourceFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.test.ts'))
    .map((e) => path.join(e.parentPath, e.name));

describe('SDK error registrations left out of the bundles', () => {
  let dynamo: LocalDynamo;
  const outdir = mkdtempSync(path.join(tmpdir(), 'relay-sdk-errors-'));
  beforeAll(async () => {
    dynamo = await startDynalite();
  });
  afterAll(async () => {
    await dynamo.close();
    rmSync(outdir, { recursive: true, force: true });
  });

  const probe = async (name: string, withPlugins: boolean): Promise<{ outcome: Outcome; bytes: number }> => {
    const options = relayBuildOptions(REPO_ROOT);
    const outfile = path.join(outdir, `${name}.mjs`);
    const result = await build({
      ...options,
      plugins: withPlugins ? options.plugins : [],
      entryPoints: [PROBE],
      outfile,
      metafile: true,
      logLevel: 'silent',
    });
    // Asynchronously: dynalite answers from this process.
    const { stdout } = await promisify(execFile)(process.execPath, [outfile], {
      env: { PATH: process.env.PATH, PROBE_ENDPOINT: dynamo.endpoint, PROBE_TABLE: dynamo.tableName },
      encoding: 'utf8',
    });
    return { outcome: JSON.parse(stdout) as Outcome, bytes: Object.values(result.metafile.outputs)[0].bytes };
  };

  it('reads every error as the untrimmed bundle does, and is smaller', async () => {
    const trimmed = await probe('trimmed', true);
    const full = await probe('full', false);

    const readable = (o: Record<string, unknown>) => ({ ...o, isResourceInUseClass: undefined });
    for (const key of ['conditionFailed', 'missingTable', 'tableInUse']) {
      expect({ key, ...readable(trimmed.outcome[key]) }).toEqual({ key, ...readable(full.outcome[key]) });
    }
    expect(trimmed.outcome.conditionFailed).toMatchObject({
      name: 'ConditionalCheckFailedException',
      conditionalCheckFailed: true,
      isConditionalCheckFailedClass: true,
      fault: 'client',
      status: 400,
    });
    expect(trimmed.outcome.missingTable).toMatchObject({
      name: 'ResourceNotFoundException',
      isResourceNotFoundClass: true,
    });
    expect(trimmed.outcome.tableInUse).toMatchObject({
      name: 'ResourceInUseException',
      serviceException: true,
      fault: 'client',
      status: 400,
    });
    expect(trimmed.outcome.tableInUse.message).toMatch(/\S/);
    // The class itself is what the trim leaves out; the untrimmed bundle still has it.
    expect(full.outcome.tableInUse.isResourceInUseClass).toBe(true);
    expect(trimmed.outcome.tableInUse.isResourceInUseClass).toBe(false);
    expect(full.bytes - trimmed.bytes).toBeGreaterThan(10_000);
  }, 60_000);

  it('keeps every error class the relay tests with instanceof', () => {
    // An `instanceof` of an SDK error left out would be false for every error in a bundle.
    const told = new Set<string>();
    for (const file of sourceFiles(path.join(REPO_ROOT, 'lambdas'))) {
      const text = readFileSync(file, 'utf8');
      const imported = new Set(
        [...text.matchAll(/import\s*(?:type\s*)?\{([^}]*)\}\s*from\s*'@aws-sdk\/client-[\w-]+'/g)].flatMap((m) =>
          m[1].split(',').map((name) => name.trim()),
        ),
      );
      for (const m of text.matchAll(/instanceof\s+(\w+)/g)) if (imported.has(m[1])) told.add(m[1]);
    }
    expect(told.size).toBeGreaterThan(0);
    expect([...told].filter((name) => !KEPT_SDK_ERRORS.includes(name))).toEqual([]);
  });
});
