/**
 * The simulator's ssh endpoints (issue 20 item 6), in both dialects: each order gets a listener on
 * 127.0.0.1 that its ssh line points to; it answers with a banner `sshDelayMs` after the order
 * started and resets connections before; it closes when the order ends and when the simulator closes.
 * Probed with the relay's own probe, so the two agree on what "answers" means.
 */
import {
  DIALECTS,
  startSimulator,
  type Dialect,
  type MarketplaceSimulator,
} from '../../../local/simulator/marketplace-simulator';
import { SIM_SSH_BANNER } from '../../../local/simulator/ssh-endpoints';
import { probeSshBanner } from '../../../lambdas/adapters/ssh-banner-probe';
import { parseSshEndpoint, type SshEndpoint } from '../../../lambdas/domain/leases/ssh-endpoint';

type ApiOrder = Record<string, unknown>;

/** The ssh command line of an order as each dialect words it (live: as the relay's reader builds it). */
const SSH_LINE: Readonly<Record<Dialect, (o: ApiOrder) => string | undefined>> = {
  spec: (o) => (o.connection as { ssh?: string }).ssh,
  live: (o) => {
    const host = (o.pub_cluster as string[])[0];
    const port = (o.tcp_ports as string[]).map((p) => /^22:(\d+)$/.exec(p)?.[1]).find(Boolean);
    return host && port ? `ssh root@${host} -p ${port}` : undefined;
  },
};

const api = async (sim: MarketplaceSimulator, endpoint: string, body?: unknown): Promise<Record<string, unknown>> => {
  const res = await fetch(`${sim.url}/v1/${endpoint}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { auth: sim.apiKey, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await res.json()) as Record<string, unknown>;
};

const probe = (endpoint: SshEndpoint) => probeSshBanner(endpoint, { allowPrivate: true, timeoutMs: 2_000 });

describe.each(DIALECTS)('Simulator ssh endpoints: %s dialect', (dialect) => {
  let clock = 1_700_000_000_000;
  let sim: MarketplaceSimulator;

  beforeAll(async () => {
    sim = await startSimulator({
      dialect,
      rateLimit: false,
      readyDelayMs: 3_000,
      sshDelayMs: 10_000,
      now: () => clock,
    });
  });
  afterAll(() => sim.close());
  beforeEach(() => {
    sim.control.reset();
    clock = 1_700_000_000_000;
  });

  /** Places an on-demand order on a free server and returns its id. */
  const place = async (): Promise<number> => {
    const coin = sim.control.nativeCoin;
    const server = sim.control
      .servers()
      .find((s) => s.online && !s.rented && s.gpu_array.length > 0 && s.allowed_coins.includes(coin));
    const answer = await api(sim, 'create_order', {
      renting_server: server?.id,
      type: 'on-demand',
      currency: coin,
      image: 'img',
      ports: { '22': 'tcp' },
    });
    expect(answer.code).toBe(0);
    return sim.control.orders().at(-1)!.order_id;
  };
  /** The order's ssh endpoint as my_orders shows it. */
  const endpointOf = async (orderId: number): Promise<SshEndpoint | undefined> => {
    const orders = (await api(sim, 'my_orders')).orders as ApiOrder[];
    const order = orders.find((o) => (dialect === 'live' ? o.id : o.order_id) === orderId);
    return order ? parseSshEndpoint(SSH_LINE[dialect](order)) : undefined;
  };

  it('points the ssh line of a running order at its own listener on 127.0.0.1, which answers sshDelayMs after the start', async () => {
    // Prepare
    const orderId = await place();
    clock += 3_000; // running
    const endpoint = await endpointOf(orderId);
    // Act
    const early = await probe(endpoint!);
    clock += 9_999;
    const stillEarly = await probe(endpoint!);
    clock += 1;
    const onTime = await probe(endpoint!);
    // Assess
    expect(endpoint).toEqual({ host: '127.0.0.1', port: expect.any(Number) });
    expect(early).toMatchObject({ answered: false, reason: 'reset' });
    expect(stillEarly).toMatchObject({ answered: false, reason: 'reset' });
    expect(onTime).toEqual({ answered: true, banner: SIM_SSH_BANNER.trim() });
    expect(sim.control.orders().find((o) => o.order_id === orderId)?.ssh_connections).toEqual({
      answered: 1,
      reset: 2,
    });
  });

  it('opens the endpoint of an order my_orders does not show yet (visibleDelayMs), so it answers once it shows', async () => {
    // Prepare
    sim.control.setSshDelay(0);
    sim.control.setVisibleDelay(20_000);
    const orderId = await place();
    clock += 3_000; // running, still invisible
    const hidden = await endpointOf(orderId);
    clock += 17_000;
    // Act
    const endpoint = await endpointOf(orderId);
    // Assess
    expect(hidden).toBeUndefined();
    expect(endpoint?.host).toBe('127.0.0.1');
    expect(await probe(endpoint!)).toMatchObject({ answered: true });
  });

  it('gives each order its own port', async () => {
    const first = await place();
    const second = await place();
    clock += 3_000;
    const [a, b] = await Promise.all([endpointOf(first), endpointOf(second)]);
    expect(a?.port).not.toBe(b?.port);
  });

  it('resets connections while the order is not running, whatever the delay', async () => {
    sim.control.setSshDelay(0);
    const orderId = await place();
    clock += 3_000;
    const endpoint = (await endpointOf(orderId))!;
    clock -= 3_000; // back before its start: creating_order
    expect(await probe(endpoint)).toMatchObject({ answered: false, reason: 'reset' });
    clock += 3_000;
    expect(await probe(endpoint)).toMatchObject({ answered: true });
  });

  it('takes the delay from the control route POST /_sim/ssh-delay', async () => {
    // Prepare
    const orderId = await place();
    clock += 3_000;
    const endpoint = (await endpointOf(orderId))!;
    // Act
    const res = await fetch(`${sim.url}/_sim/ssh-delay`, { method: 'POST', body: JSON.stringify({ ms: 0 }) });
    const bad = await fetch(`${sim.url}/_sim/ssh-delay`, { method: 'POST', body: JSON.stringify({ ms: -1 }) });
    // Assess
    expect(res.status).toBe(200);
    expect(bad.status).toBe(400);
    expect(await probe(endpoint)).toMatchObject({ answered: true });
  });

  it('closes the listener when the order ends: cancelled, then refused', async () => {
    // Prepare
    sim.control.setSshDelay(0);
    const orderId = await place();
    clock += 3_000;
    const endpoint = (await endpointOf(orderId))!;
    expect(await probe(endpoint)).toMatchObject({ answered: true });
    // Act
    expect((await api(sim, 'cancel_order', { id: orderId })).code).toBe(0);
    // Assess
    expect(await probe(endpoint)).toMatchObject({ answered: false, reason: 'refused' });
    expect(sim.control.orders().find((o) => o.order_id === orderId)?.ssh_connections).toEqual({
      answered: 1,
      reset: 0,
    });
  });

  it('closes the listener of an order the control expires', async () => {
    sim.control.setSshDelay(0);
    const orderId = await place();
    clock += 3_000;
    const endpoint = (await endpointOf(orderId))!;
    sim.control.setOrder(orderId, { expired: true });
    expect(await probe(endpoint)).toMatchObject({ answered: false, reason: 'refused' });
  });

  it('closes every listener on reset', async () => {
    sim.control.setSshDelay(0);
    const orderId = await place();
    clock += 3_000;
    const endpoint = (await endpointOf(orderId))!;
    sim.control.reset();
    expect(await probe(endpoint)).toMatchObject({ answered: false, reason: 'refused' });
  });
});

describe('Simulator ssh endpoints: close()', () => {
  it('closes every listener and open ssh connection, so nothing keeps the process alive', async () => {
    // Prepare: an order whose ssh answers, and a client that holds its connection open
    const sim = await startSimulator({ rateLimit: false, readyDelayMs: 0 });
    const server = sim.control
      .servers()
      .find((s) => s.online && !s.rented && s.gpu_array.length > 0 && s.allowed_coins.includes(sim.control.nativeCoin));
    await api(sim, 'create_order', {
      renting_server: server?.id,
      type: 'on-demand',
      currency: sim.control.nativeCoin,
      image: 'img',
    });
    const ssh = (sim.control.orders()[0]?.connection.ssh ?? '') as string;
    const endpoint = parseSshEndpoint(ssh)!;
    const { connect } = await import('node:net');
    const held = connect(endpoint.port, endpoint.host);
    const closed = new Promise<void>((resolve) => held.once('close', () => resolve()));
    held.on('error', () => undefined);
    await new Promise<void>((resolve) => held.once('data', () => resolve()));
    // Act
    await sim.close();
    // Assess
    await closed;
    expect(await probe(endpoint)).toMatchObject({ answered: false, reason: 'refused' });
  });
});
