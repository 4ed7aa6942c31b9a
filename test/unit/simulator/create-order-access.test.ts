/**
 * create_order's access fields (issue 37 §1, §7; marketplace-live.md "Fourth round"), in both
 * dialects: `ssh_key`, `ssh_password`, `jupyter_token`, `command` and `autossh_entrypoint` are taken
 * and recorded (control.orderRequest shows the body the marketplace received), bad values are
 * refused as any invalid body is (code 2, no order), and my_orders never shows a secret.
 */
import { DIALECTS, startSimulator, type MarketplaceSimulator } from '../../../local/simulator/marketplace-simulator';
import { generateSshKeyPair } from '../../helpers/ssh-keys';

const KEY = generateSshKeyPair('renter@laptop').publicKey;
const KEY_ONLY = KEY.split(' ').slice(0, 2).join(' ');
const OTHER_KEY = generateSshKeyPair().publicKey;
/** A line whose type says ed25519 and whose blob is another key type's. */
const RSA_BLOB = 'AAAAB3NzaC1yc2EAAAADAQABAAAAgQDlsKp6rIUGzJqyQq9W7CqkDp4NhVyZ0lYgH1kX8Hq5Y1sN8a1g7dVwqnJEt3m8';

interface Answer {
  readonly status: number;
  readonly text: string;
  readonly body: { code: number; [field: string]: unknown };
}

const call = async (sim: MarketplaceSimulator, path: string, body?: unknown): Promise<Answer> => {
  const res = await fetch(`${sim.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { auth: sim.apiKey, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as Answer['body'] };
};

describe.each(DIALECTS)('Simulator create_order access fields: %s dialect', (dialect) => {
  let sim: MarketplaceSimulator;
  beforeAll(async () => {
    sim = await startSimulator({ dialect, rateLimit: false, readyDelayMs: 0 });
  });
  afterAll(() => sim.close());
  beforeEach(() => sim.control.reset());

  const order = (fields: Record<string, unknown>) => {
    const coin = sim.control.nativeCoin;
    const server = sim.control
      .servers()
      .find((s) => s.online && !s.rented && s.gpu_array.length > 0 && s.allowed_coins.includes(coin));
    return {
      renting_server: server?.id,
      type: 'on-demand',
      currency: coin,
      image: 'nvidia/cuda:12.4.1-base-ubuntu22.04',
      ports: { '22': 'tcp', '8888': 'http' },
      ...fields,
    };
  };
  const createdId = (): number => {
    const [only, ...rest] = sim.control.orders();
    if (!only || rest.length > 0) throw new Error('expected exactly one order');
    return only.order_id;
  };

  it.each([
    ['ssh_key', 'a key line with a comment', KEY],
    ['ssh_key', 'a key line without a comment', KEY_ONLY],
    ['ssh_key', 'a key line of 3,072 characters', `${KEY_ONLY} ${'c'.repeat(3_072 - KEY_ONLY.length - 1)}`],
    ['ssh_password', 'letters and digits', 'Sim0nSays1234'],
    ['ssh_password', '32 characters', 'a'.repeat(32)],
    ['jupyter_token', '32 letters and digits', 'k9TgQ2mZxR7vLp4sWn8bYc3dHf6jA1eU'],
    ['command', 'a shell script', '#!/bin/sh\napt update -y\n'],
    ['command', '16 KiB', 'x'.repeat(16_384)],
    ['command', '16 KiB in UTF-8 bytes', 'é'.repeat(8_192)],
    ['autossh_entrypoint', 'true', true],
    ['autossh_entrypoint', 'false', false],
    ['autossh_entrypoint', 'the string "ssh_autoinstall"', 'ssh_autoinstall'],
  ])('takes %s: %s, and records it as sent', async (field, _what, value) => {
    // Prepare
    const body = order({ [field]: value });
    // Act
    const answer = await call(sim, '/v1/create_order', body);
    // Assess
    expect(answer.body.code).toBe(0);
    expect(sim.control.orderRequest(createdId())).toEqual(body);
  });

  it('records every field of one body, unknown ones included, and serves it on GET /_sim/orders/:id/request', async () => {
    // Prepare
    const body = order({
      ssh_key: KEY,
      ssh_password: 'Sim0nSays1234',
      jupyter_token: 'k9TgQ2mZxR7vLp4sWn8bYc3dHf6jA1eU',
      command: '#!/bin/sh\necho ready\n',
      autossh_entrypoint: true,
      remember_password: false,
    });
    // Act
    expect((await call(sim, '/v1/create_order', body)).body.code).toBe(0);
    const id = createdId();
    const route = await call(sim, `/_sim/orders/${id}/request`);
    const unknown = await call(sim, `/_sim/orders/${id + 1_000}/request`);
    // Assess
    expect(sim.control.orderRequest(id)).toEqual(body);
    expect(route).toMatchObject({ status: 200, body: { request: body } });
    expect(unknown.status).toBe(404);
    expect(sim.control.orderRequest(id + 1_000)).toBeUndefined();
  });

  it('forgets the recorded bodies on reset', async () => {
    expect((await call(sim, '/v1/create_order', order({ ssh_password: 'Sim0nSays1234' }))).body.code).toBe(0);
    const id = createdId();
    sim.control.reset();
    expect(sim.control.orderRequest(id)).toBeUndefined();
  });

  it.each([
    ['ssh_key', 'a private key', generateSshKeyPair().privateKey],
    ['ssh_key', 'two lines', `${KEY}\n${OTHER_KEY}`],
    ['ssh_key', 'a trailing line break', `${KEY}\n`],
    ['ssh_key', 'an unknown type', `ssh-foo ${KEY_ONLY.split(' ')[1]}`],
    ['ssh_key', 'a blob of another type than the line names', `ssh-ed25519 ${RSA_BLOB}`],
    ['ssh_key', 'no key data', 'ssh-ed25519'],
    ['ssh_key', 'not base64', 'ssh-ed25519 AAAA!C3NzaC1lZDI1NTE5'],
    ['ssh_key', 'over 3,072 characters', `${KEY_ONLY} ${'c'.repeat(3_072 - KEY_ONLY.length)}`],
    ['ssh_key', 'not a string', 42],
    ['ssh_password', 'not alphanumeric', 'has spaces!'],
    ['ssh_password', 'over 32 characters', 'a'.repeat(33)],
    ['jupyter_token', 'not alphanumeric', 'tok-en'],
    ['jupyter_token', 'over 32 characters', 'b'.repeat(33)],
    ['jupyter_token', 'empty', ''],
    ['command', 'over 16 KiB', 'x'.repeat(16_385)],
    ['command', 'over 16 KiB in UTF-8 bytes', 'é'.repeat(8_193)],
    ['command', 'not a string', ['apt', 'update']],
    ['autossh_entrypoint', 'another string', 'yes'],
    ['autossh_entrypoint', 'a number', 1],
  ])('refuses %s that is %s with code 2 and creates no order', async (field, _what, value) => {
    // Act
    const answer = await call(sim, '/v1/create_order', order({ [field]: value }));
    // Assess
    expect(answer.body).toEqual({ code: 2 });
    expect(sim.control.orders()).toEqual([]);
    expect(sim.control.counters().ordersCreated).toBe(0);
  });

  it("never shows the password, token, key or command in my_orders (running or ended) nor in the control's order list", async () => {
    // Prepare
    const secrets = {
      ssh_key: KEY,
      ssh_password: 'Sim0nSays1234',
      jupyter_token: 'k9TgQ2mZxR7vLp4sWn8bYc3dHf6jA1eU',
      command: '#!/bin/sh\necho SECRET-START-UP\n',
    };
    expect((await call(sim, '/v1/create_order', order({ ...secrets, autossh_entrypoint: true }))).body.code).toBe(0);
    const id = createdId();
    // Act
    const running = await call(sim, '/v1/my_orders');
    expect((await call(sim, '/v1/cancel_order', { id })).body.code).toBe(0);
    const ended = await call(sim, '/v1/my_orders?return_completed=true');
    const control = await call(sim, '/_sim/orders');
    // Assess
    expect((running.body.orders as unknown[]).length).toBe(1);
    expect((ended.body.orders as unknown[]).length).toBe(1);
    const keyData = KEY_ONLY.split(' ')[1] as string;
    for (const text of [running.text, ended.text, control.text, JSON.stringify(sim.control.orders())]) {
      for (const secret of [secrets.ssh_password, secrets.jupyter_token, keyData, 'SECRET-START-UP'])
        expect(text).not.toContain(secret);
      expect(text).not.toMatch(/ssh_key|ssh_password|jupyter_token|"command"|autossh/);
    }
  });
});
