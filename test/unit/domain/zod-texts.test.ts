/** zod's English texts (lambdas/domain/zod-texts.ts), built on the first failed parse that needs one. */
import * as z from 'zod/mini';
import { ENGLISH_TEXTS } from '../../../lambdas/domain/zod-texts';

describe('Domain: ENGLISH_TEXTS', () => {
  it("gives a failed parse classic zod's English texts, on every parse", () => {
    const schema = z.object({ price: z.number(), gpu: z.string() });
    for (let i = 0; i < 2; i += 1) {
      const parsed = schema.safeParse({ price: 'cheap' }, ENGLISH_TEXTS);
      expect(parsed.success).toBe(false);
      expect(parsed.error?.issues.map((issue) => issue.message)).toEqual([
        'Invalid input: expected number, received string',
        'Invalid input: expected string, received undefined',
      ]);
    }
  });

  it('leaves a message of the schema’s own as it is', () => {
    const parsed = z.string({ error: 'gpu_type required' }).safeParse(1, ENGLISH_TEXTS);
    expect(parsed.error?.issues[0].message).toBe('gpu_type required');
  });
});
