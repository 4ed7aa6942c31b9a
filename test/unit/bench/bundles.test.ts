import { moduleOf, topModules } from '../../../bench/bundles';

describe('bench bundles: metafile grouping', () => {
  it('groups node_modules by package, scoped or not, and our code by folder', () => {
    expect(moduleOf('node_modules/@smithy/core/dist-es/submodules/protocols/index.js')).toBe('@smithy/core');
    expect(moduleOf('node_modules/zod/v4/classic/schemas.js')).toBe('zod');
    expect(moduleOf('node_modules/@aws-sdk/client-sqs/node_modules/@smithy/core/dist-es/index.js')).toBe(
      '@smithy/core',
    );
    expect(moduleOf('lambdas/adapters/secrets.ts')).toBe('lambdas/adapters');
    expect(moduleOf('lib/routes.ts')).toBe('lib');
  });

  it('ranks modules by the bytes they put in the output', () => {
    const output = {
      bytes: 0,
      imports: [],
      exports: [],
      entryPoint: 'x',
      inputs: {
        'node_modules/zod/a.js': { bytesInOutput: 10 },
        'node_modules/zod/b.js': { bytesInOutput: 15 },
        'node_modules/@smithy/core/c.js': { bytesInOutput: 20 },
        'lambdas/domain/x.ts': { bytesInOutput: 1 },
      },
    };
    expect(topModules(output, 2)).toEqual([
      { module: 'zod', bytes: 25 },
      { module: '@smithy/core', bytes: 20 },
    ]);
  });
});
