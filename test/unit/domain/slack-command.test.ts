import { parseSlackCommand, unknownCommandText, usageText } from '../../../lambdas/domain/requests/slack-command';

describe('Function: parseSlackCommand', () => {
  it.each([
    ['rent RTX_4090', { kind: 'rent', gpu_type: 'RTX 4090' }],
    ['rent RTX_4090 0.5', { kind: 'rent', gpu_type: 'RTX 4090', max_price: 0.5 }],
    ['rent _RTX__A6000_', { kind: 'rent', gpu_type: 'RTX A6000' }],
    ['RENT a100 0.75', { kind: 'rent', gpu_type: 'a100', max_price: 0.75 }],
    ['  Rent   H100   $2  ', { kind: 'rent', gpu_type: 'H100', max_price: 2 }],
    ['rent A100 .5', { kind: 'rent', gpu_type: 'A100', max_price: 0.5 }],
    ['cancel 42', { kind: 'cancel', order_id: 42 }],
    ['Cancel 0042', { kind: 'cancel', order_id: 42 }],
    ['status', { kind: 'status' }],
    ['STATUS please', { kind: 'status' }],
    ['extend 42 2', { kind: 'extend', order_id: 42, hours: 2 }],
    ['EXTEND 42 0.25', { kind: 'extend', order_id: 42, hours: 0.25 }],
    ['extend 42 720', { kind: 'extend', order_id: 42, hours: 720 }],
    ['bid 42 12.5', { kind: 'bid', order_id: 42, desired_price: 12.5 }],
    // Issue 23: a standing order's wait and the outbid policy, after the price, in any order.
    [
      'rent RTX_4090 0.5 wait=2h rebid',
      { kind: 'rent', gpu_type: 'RTX 4090', max_price: 0.5, wait_seconds: 7200, on_outbid: 'rebid' },
    ],
    [
      'rent RTX_4090 REPLACE WAIT=90m',
      { kind: 'rent', gpu_type: 'RTX 4090', on_outbid: 'replace', wait_seconds: 5400 },
    ],
    ['rent A100 wait=45s', { kind: 'rent', gpu_type: 'A100', wait_seconds: 45 }],
    // Issue 31: host filters.
    [
      'rent RTX_4090 0.5 rel=0.99 rating=4.5',
      { kind: 'rent', gpu_type: 'RTX 4090', max_price: 0.5, min_reliability: 0.99, min_rating: 4.5 },
    ],
    ['rent A100 RATING=4 wait=1h', { kind: 'rent', gpu_type: 'A100', min_rating: 4, wait_seconds: 3600 }],
    ['rent A100 wait=24h', { kind: 'rent', gpu_type: 'A100', wait_seconds: 86_400 }],
    ['rent A100 wait=1.5h', { kind: 'rent', gpu_type: 'A100', wait_seconds: 5400 }],
    [
      'rent A100 $1 rebid_then_replace',
      { kind: 'rent', gpu_type: 'A100', max_price: 1, on_outbid: 'rebid_then_replace' },
    ],
    ['rent A100 notify', { kind: 'rent', gpu_type: 'A100', on_outbid: 'notify' }],
    ['Bid 0042 $3', { kind: 'bid', order_id: 42, desired_price: 3 }],
  ])('parses %j', (text, expected) => {
    expect(parseSlackCommand(text)).toEqual(expected);
  });

  it.each([[''], ['   '], [undefined]])('returns the usage for empty text %j', (text) => {
    expect(parseSlackCommand(text)).toEqual({ kind: 'usage', text: usageText() });
  });

  it.each([
    ['rent'],
    ['rent A100 abc'],
    ['rent A100 0'],
    ['rent A100 -1'],
    ['rent A100 1 2'],
    ['cancel'],
    ['cancel abc'],
    ['cancel 0'],
    ['cancel 1.5'],
    ['cancel 1 2'],
    [`rent ${'x'.repeat(101)}`],
    ['rent _'],
    ['rent ___ 1'],
  ])('returns a usage message for missing or invalid arguments: %j', (text) => {
    const parsed = parseSlackCommand(text, '/relay');
    expect(parsed.kind).toBe('usage');
    expect(parsed.kind === 'usage' && parsed.text).toMatch(/^Usage: `\/relay (rent|cancel) /);
  });

  it.each([
    ['wait=25h'],
    ['wait=0s'],
    ['wait=2'],
    ['wait=2d'],
    ['wait=-1h'],
    ['wait=abc'],
    ['wait='],
    ['wait=0.5s'],
    ['wait=86401s'],
  ])('answers rent with a wait= error naming the word for %j', (word) => {
    const parsed = parseSlackCommand(`rent RTX_4090 0.5 ${word}`, '/relay');
    expect(parsed.kind).toBe('usage');
    expect(parsed.kind === 'usage' && parsed.text).toMatch(
      new RegExp(
        `^\`${word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\`: wait= takes a number with a unit, s, m or h \\(e\\.g\\. 45s, 90m, 2h\\), at most 24h\\.\nUsage: \`/relay rent `,
      ),
    );
  });

  it.each([
    ['rent A100 rebid 0.5'],
    ['rent A100 rebid replace'],
    ['rent A100 wait=1h wait=2h'],
    ['rent A100 0.5 wait=1h rebid extra'],
    ['rent A100 0.5 rebidd'],
    ['rent A100 0.5 0.6'],
  ])('returns the rent usage for a misplaced, repeated or unknown option: %j', (text) => {
    const parsed = parseSlackCommand(text, '/relay');
    expect(parsed.kind === 'usage' && parsed.text).toMatch(
      /^Usage: `\/relay rent <gpu_type> \[max_price\] \[wait=<n>s\|m\|h\] \[notify\|rebid\|replace\|rebid_then_replace\] \[rel=<0-1>\] \[rating=<0-5>\]`/,
    );
  });

  it('shows wait= and the outbid words in the usage text', () => {
    expect(usageText('/gpu')).toContain('`wait=<n>s|m|h`');
    expect(usageText('/gpu')).toContain('`/gpu rent RTX_4090 0.5 wait=2h rebid`');
    const example = /`\/gpu (rent RTX_4090 0\.5 wait=2h rebid)`/.exec(usageText('/gpu'))?.[1];
    expect(parseSlackCommand(example)).toEqual({
      kind: 'rent',
      gpu_type: 'RTX 4090',
      max_price: 0.5,
      wait_seconds: 7200,
      on_outbid: 'rebid',
    });
  });

  it.each([
    ['extend'],
    ['extend 42'],
    ['extend 42 0'],
    ['extend 42 721'],
    ['extend 42 -1'],
    ['extend 42 two'],
    ['extend x 2'],
    ['extend 42 2 3'],
    ['extend 0 2'],
  ])('returns the extend usage for %j', (text) => {
    const parsed = parseSlackCommand(text, '/relay');
    expect(parsed.kind === 'usage' && parsed.text).toMatch(/^Usage: `\/relay extend <order_id> <hours>`/);
  });

  it.each([
    ['bid'],
    ['bid 42'],
    ['bid 42 0'],
    ['bid 42 -3'],
    ['bid 42 abc'],
    ['bid x 3'],
    ['bid 42 3 4'],
    ['bid 42 0.000000001'],
    ['bid 42 10000001'],
  ])('returns the bid usage for %j', (text) => {
    const parsed = parseSlackCommand(text, '/relay');
    expect(parsed.kind === 'usage' && parsed.text).toMatch(/^Usage: `\/relay bid <order_id> <price>`/);
  });

  it('lists extend and bid in the usage text', () => {
    expect(usageText('/gpu')).toContain('`/gpu extend <order_id> <hours>`');
    expect(usageText('/gpu')).toContain('`/gpu bid <order_id> <price>`');
  });

  it.each([[usageText('/gpu')], [(parseSlackCommand('rent', '/gpu') as { text: string }).text]])(
    'suggests a rent example that parses to a GPU name the marketplace uses: %j',
    (text) => {
      const example = /`\/gpu (rent [^`]+)`/.exec(text.replace('rent <gpu_type> [max_price]', ''))?.[1];
      expect(example).toBe('rent RTX_4090 0.5');
      const parsed = parseSlackCommand(example);
      expect(parsed).toEqual({ kind: 'rent', gpu_type: 'RTX 4090', max_price: 0.5 });
      // A substring of how the marketplace names the GPU (matching is a case-insensitive substring test).
      expect('NVIDIA GeForce RTX 4090'.toLowerCase()).toContain(
        (parsed as { gpu_type: string }).gpu_type.toLowerCase(),
      );
    },
  );

  it('names an unknown subcommand', () => {
    expect(parseSlackCommand('Launch A100')).toEqual({ kind: 'unknown', word: 'Launch' });
    expect(unknownCommandText('Launch')).toMatch(/^Unknown command `Launch`\.\nUsage:/);
  });

  it('escapes Slack markup in the echoed word', () => {
    expect(unknownCommandText('<!channel>&')).toContain('`&lt;!channel&gt;&amp;`');
  });
});
