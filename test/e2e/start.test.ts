/**
 * `npm start` pieces that need no servers: the banner (never a secret value, a loud warning for the
 * placeholder secret) and `.env` loading (the environment wins over the file).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { loadDotenv, parseDotenv } from '../../local/dotenv';
import { PLACEHOLDER_WEBHOOK_SECRET } from '../../local/runtime';
import type { LocalRuntime } from '../../local/runtime';
import { banner } from '../../local/start';

const fakeRuntime = (env: Record<string, string>, withSimulator = true): LocalRuntime => ({
  url: 'http://127.0.0.1:5000',
  port: 5000,
  simulator: withSimulator
    ? ({
        url: 'http://127.0.0.1:5001',
        apiKey: env.MARKETPLACE_API_KEY,
        control: {},
        close: async () => undefined,
      } as unknown as LocalRuntime['simulator'])
    : undefined,
  sqs: {
    endpoint: 'http://127.0.0.1:5002',
    queueUrl: 'http://127.0.0.1:5002/000000000000/jobs',
    dlqUrl: 'http://127.0.0.1:5002/000000000000/jobs-dlq',
  },
  dynamo: { endpoint: 'http://127.0.0.1:5003', tableName: 'relay' },
  env: { MARKETPLACE_URL: 'http://127.0.0.1:5001', ...env },
  timings: { total: 1234 },
  watch: { sweeps: () => 0, completed: () => 0 },
  iam: { mode: 'report', denials: () => [] },
  close: async () => undefined,
});

describe('Function: banner', () => {
  it('names where each secret came from without printing any secret value', () => {
    // Prepare
    const env = {
      WEBHOOK_SECRET: 'super-secret-value-1',
      MARKETPLACE_API_KEY: 'api-key-value-2',
      SLACK_WEBHOOK_URL: 'https://hooks.slack.example/T000/B000/XXXX',
      DISCORD_WEBHOOK_URL: 'https://discord.example/api/webhooks/1/abcd',
    };
    // Act
    const text = banner(fakeRuntime(env), {
      WEBHOOK_SECRET: '.env',
      MARKETPLACE_API_KEY: 'environment',
      SLACK_WEBHOOK_URL: '.env',
      DISCORD_WEBHOOK_URL: 'environment',
    });
    // Assess
    for (const value of Object.values(env)) expect(text).not.toContain(value);
    expect(text).toContain('http://127.0.0.1:5000');
    expect(text).toContain('WEBHOOK_SECRET from .env');
    expect(text).toContain('MARKETPLACE_API_KEY from the environment');
    expect(text).toContain('embedded simulator');
    expect(text).not.toMatch(/WARNING/);
  });

  it('prints a callback signing secret the runtime generated (receivers need it), never a configured one', () => {
    // Prepare
    const generated = `whsec_${Buffer.alloc(32, 5).toString('base64')}`;
    const configured = `whsec_${Buffer.alloc(32, 6).toString('base64')}`;
    // Act
    const unset = banner(fakeRuntime({ WEBHOOK_SECRET: 'w', CALLBACK_SIGNING_SECRET: generated }), {
      WEBHOOK_SECRET: '.env',
    });
    const fromFile = banner(fakeRuntime({ WEBHOOK_SECRET: 'w', CALLBACK_SIGNING_SECRET: configured }), {
      WEBHOOK_SECRET: '.env',
      CALLBACK_SIGNING_SECRET: '.env',
    });
    // Assess
    expect(unset).toContain('callback signing secret: GENERATED for this run');
    expect(unset).toContain(`CALLBACK_SIGNING_SECRET=${generated}`);
    expect(fromFile).toContain('CALLBACK_SIGNING_SECRET from .env');
    expect(fromFile).not.toContain(configured);
  });

  it('warns loudly when the webhook secret is the placeholder, and names an external marketplace by origin only', () => {
    // Prepare
    const env = {
      WEBHOOK_SECRET: PLACEHOLDER_WEBHOOK_SECRET,
      MARKETPLACE_URL: 'https://user:pw@market.example.com/base?k=v',
      MARKETPLACE_API_KEY: 'k',
    };
    // Act
    const text = banner(fakeRuntime(env, false), {});
    // Assess
    expect(text).toMatch(/WARNING: WEBHOOK_SECRET is the built-in PLACEHOLDER/);
    expect(text).not.toContain(PLACEHOLDER_WEBHOOK_SECRET);
    expect(text).toContain('https://market.example.com');
    expect(text).not.toContain('pw@');
    expect(text).toMatch(/Slack: not set/);
  });
});

describe('Function: loadDotenv', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'dotenv-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('applies variables from the file but never overrides the environment', () => {
    // Prepare
    const file = path.join(dir, '.env');
    writeFileSync(file, '# comment\nWEBHOOK_SECRET="from file"\nexport PORT=6000\nMAX_REQUESTS_PER_MINUTE=5\n');
    const env: NodeJS.ProcessEnv = { PORT: '7000' };
    // Act
    const loaded = loadDotenv(file, env);
    // Assess
    expect(env).toEqual({ PORT: '7000', WEBHOOK_SECRET: 'from file', MAX_REQUESTS_PER_MINUTE: '5' });
    expect([...loaded.applied].sort()).toEqual(['MAX_REQUESTS_PER_MINUTE', 'WEBHOOK_SECRET']);
  });

  it('does nothing when the file does not exist', () => {
    // Act
    const env: NodeJS.ProcessEnv = {};
    const loaded = loadDotenv(path.join(dir, 'missing.env'), env);
    // Assess
    expect(loaded).toEqual({ file: undefined, applied: [] });
    expect(env).toEqual({});
  });

  it('parses quotes, export prefixes and comments', () => {
    // Act
    const parsed = parseDotenv('A=1\nexport B=\'two words\'\n# C=3\nD="x"\n');
    // Assess
    expect(parsed).toEqual({ A: '1', B: 'two words', D: 'x' });
  });
});

describe('Function: banner, one machine (issue 39)', () => {
  it('says when the marketplace is the production one and that state is only in memory', () => {
    const text = banner(
      fakeRuntime({ MARKETPLACE_URL: 'https://api.marketplace.example/v1', MARKETPLACE_API_KEY: 'k' }, false),
      {},
    );
    expect(text).toMatch(
      /Marketplace {2}PRODUCTION https:\/\/api\.marketplace\.example \(MARKETPLACE_URL\): orders are real and billed/,
    );
    expect(text).toMatch(/State {8}in memory: gone when the relay stops/);
  });

  it('says where state is kept, what a restart carried on, and the bind address', () => {
    const runtime: LocalRuntime = {
      ...fakeRuntime({ HOST: '0.0.0.0' }),
      state: {
        dir: '/srv/relay/state',
        created: false,
        restoredJobs: 2,
        resumedExecutions: ['t1'],
        timedOutExecutions: [],
        sweepTtl: async () => ({ scanned: 0, deleted: 0 }),
        snapshot: async () => [],
      },
    };
    const text = banner(runtime, {});
    expect(text).toContain('State        kept in /srv/relay/state (STATE_DIR), carried on: 1 workflow(s), 2 job(s)');
    expect(text).toContain('(bound to 0.0.0.0, HOST)');
    expect(text).toContain('Marketplace  embedded simulator');
  });
});
