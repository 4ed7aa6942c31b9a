/**
 * The stack model cache (local/stack-model-cache.ts): a start on an unchanged checkout reads the
 * model instead of synthesizing; any edit to what decides the template is a miss.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { loadStackModel, stackModelHash, STACK_MODEL_INPUTS } from '../../../local/stack-model-cache';
import type { StackModel } from '../../../local/stack-model';

const modelNamed = (name: string) => ({ stateMachineLogicalId: name }) as unknown as StackModel;

describe('stack model cache', () => {
  let root: string;
  let dir: string;
  const saved = { ...process.env };

  beforeEach(() => {
    root = mkdtempSync(path.join(tmpdir(), 'model-root-'));
    dir = path.join(root, 'cache');
    mkdirSync(path.join(root, 'lib', 'constructs'), { recursive: true });
    mkdirSync(path.join(root, 'contract'));
    mkdirSync(path.join(root, 'local'));
    writeFileSync(path.join(root, 'lib', 'relay-stack.ts'), 'export const a = 1;');
    writeFileSync(path.join(root, 'lib', 'constructs', 'table.ts'), 'export const b = 1;');
    writeFileSync(path.join(root, 'contract', 'routes.ts'), 'export const c = 1;');
    writeFileSync(path.join(root, 'local', 'stack-model.ts'), 'export const d = 1;');
    writeFileSync(path.join(root, 'local', 'asl.ts'), 'export const e = 1;');
    writeFileSync(path.join(root, 'local', 'runtime.ts'), 'export const f = 1;');
    writeFileSync(path.join(root, 'package-lock.json'), '{}');
    delete process.env.IAM_MUTATION;
    delete process.env.STACK_MODEL_CACHE;
  });
  afterEach(() => {
    process.env = { ...saved };
    rmSync(root, { recursive: true, force: true });
  });

  it('synthesizes once, then reads the kept model without synthesizing', async () => {
    const synthesize = jest.fn(() => modelNamed('first'));
    const sources: string[] = [];
    const first = await loadStackModel(synthesize, { root, dir, onSource: (s) => sources.push(s) });
    const second = await loadStackModel(synthesize, { root, dir, onSource: (s) => sources.push(s) });
    expect(synthesize).toHaveBeenCalledTimes(1);
    expect(sources).toEqual(['synth', 'cache']);
    expect(second).toEqual(first);
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it.each([
    ['a construct', 'lib/constructs/table.ts'],
    ['the contract', 'contract/routes.ts'],
    ['the model builder', 'local/stack-model.ts'],
    ['the ASL reader', 'local/asl.ts'],
    ['the installed packages', 'package-lock.json'],
  ])('synthesizes again after an edit to %s, and keeps only the newest model', async (_what, file) => {
    await loadStackModel(() => modelNamed('before'), { root, dir });
    writeFileSync(path.join(root, file), 'changed');
    const after = await loadStackModel(() => modelNamed('after'), { root, dir });
    expect(after.stateMachineLogicalId).toBe('after');
    expect(readdirSync(dir)).toHaveLength(1);
  });

  it('hashes only what decides the template (an edit elsewhere keeps the hash)', () => {
    const before = stackModelHash(root);
    writeFileSync(path.join(root, 'local', 'runtime.ts'), 'changed');
    expect(stackModelHash(root)).toBe(before);
    writeFileSync(path.join(root, 'lib', 'new-construct.ts'), 'export {};');
    expect(stackModelHash(root)).not.toBe(before);
    expect(STACK_MODEL_INPUTS).toEqual(expect.arrayContaining(['lib', 'contract', 'package-lock.json']));
  });

  it.each([
    ['IAM_MUTATION', 'family:TASK'],
    ['STACK_MODEL_CACHE', 'off'],
  ])('always synthesizes with %s=%s and keeps nothing', async (name, value) => {
    await loadStackModel(() => modelNamed('kept'), { root, dir });
    process.env[name] = value;
    const synthesize = jest.fn(() => modelNamed('fresh'));
    expect((await loadStackModel(synthesize, { root, dir })).stateMachineLogicalId).toBe('fresh');
    expect(synthesize).toHaveBeenCalledTimes(1);
  });

  it('still returns the model when the cache folder cannot be written', async () => {
    writeFileSync(path.join(root, 'blocked'), 'a file where the folder would be');
    const model = await loadStackModel(() => modelNamed('unkept'), { root, dir: path.join(root, 'blocked', 'cache') });
    expect(model.stateMachineLogicalId).toBe('unkept');
  });
});
