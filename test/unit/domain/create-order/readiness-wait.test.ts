import { checkOrder } from '../../../../lambdas/domain/create-order/readiness-wait';
import { readyTimeoutMessage, workflowResult } from '../../../../lambdas/domain/create-order/report-result';
import type { SshProbe, SshProbeResult } from '../../../../lambdas/domain/ports';
import type { SshEndpoint } from '../../../../lambdas/domain/leases/ssh-endpoint';
import { aPlacedOrder, aState } from '../../../fakes/builders';
import { FakeMarketplace } from '../../../fakes/marketplace';

const NOW = 1_000_000;

describe('Function: checkOrder', () => {
  const placed = { retry: false as const, order_id: 5, server_id: 1, placed_at: NOW };

  it('is ready when the order runs', async () => {
    const marketplace = new FakeMarketplace();
    marketplace.orders = [aPlacedOrder(5, 1, 1, 'running')];
    const result = await checkOrder(aState({ placement: placed }), { marketplace }, NOW + 1000);
    // ready_at: when the poll saw it running (a lease counts from here).
    expect(result).toEqual({
      ready: true,
      timedOut: false,
      order: { order_id: 5, status: 'running', ssh_connection: 'ssh -p 2222 root@host5' },
      ready_at: NOW + 1000,
    });
  });

  it('waits within the readiness window and times out after it', async () => {
    const marketplace = new FakeMarketplace();
    marketplace.orders = [aPlacedOrder(5, 1, 1, 'creating_order')];
    const state = aState({ placement: placed });
    expect(await checkOrder(state, { marketplace }, NOW + 120_000)).toMatchObject({ ready: false, timedOut: false });
    expect(await checkOrder(state, { marketplace }, NOW + 120_001)).toMatchObject({
      ready: false,
      timedOut: true,
      reason: 'ready_timeout',
    });
  });

  it('times out at the soft deadline', async () => {
    const marketplace = new FakeMarketplace();
    const state = aState({
      placement: placed,
      timing: { poll_interval_seconds: 1, ready_timeout_seconds: 120, soft_deadline: NOW / 1000 + 10 },
    });
    expect(await checkOrder(state, { marketplace }, NOW + 10_000)).toMatchObject({ timedOut: false });
    expect(await checkOrder(state, { marketplace }, NOW + 10_001)).toMatchObject({
      timedOut: true,
      reason: 'soft_deadline',
    });
  });

  describe('with the ssh probe (READINESS_PROBE=ssh)', () => {
    /** A probe answering from a script, recording what it was asked. */
    const fakeProbe = (...answers: SshProbeResult[]): SshProbe & { readonly asked: SshEndpoint[] } => {
      const asked: SshEndpoint[] = [];
      return {
        asked,
        probe: async (endpoint) => {
          asked.push(endpoint);
          return answers.shift() ?? { answered: false, reason: 'refused' };
        },
      };
    };
    const BANNER: SshProbeResult = { answered: true, banner: 'SSH-2.0-OpenSSH_9.6' };
    const runningOrder = (ssh: string | null = 'ssh root@n1.example -p 1277') => {
      const marketplace = new FakeMarketplace();
      marketplace.orders = [{ ...aPlacedOrder(5, 1, 1, 'running'), connection: ssh === null ? {} : { ssh } }];
      return marketplace;
    };

    it('is ready only once the ssh endpoint of the running order answers with a banner', async () => {
      // Prepare
      const marketplace = runningOrder();
      const sshProbe = fakeProbe({ answered: false, reason: 'refused', detail: 'ECONNREFUSED' }, BANNER);
      const state = aState({ placement: placed });
      // Act
      const first = await checkOrder(state, { marketplace, sshProbe }, NOW + 1000);
      const second = await checkOrder(state, { marketplace, sshProbe }, NOW + 6000);
      // Assess
      expect(first).toEqual({
        ready: false,
        timedOut: false,
        pending: 'ssh_not_answering',
        ssh_probe: 'refused',
        order: { order_id: 5, status: 'running', ssh_connection: 'ssh root@n1.example -p 1277' },
      });
      expect(second).toEqual({
        ready: true,
        timedOut: false,
        order: { order_id: 5, status: 'running', ssh_connection: 'ssh root@n1.example -p 1277' },
        ready_at: NOW + 6000,
      });
      expect(sshProbe.asked).toEqual([
        { host: 'n1.example', port: 1277 },
        { host: 'n1.example', port: 1277 },
      ]);
    });

    it('does not probe an order that is not running yet', async () => {
      const marketplace = new FakeMarketplace();
      marketplace.orders = [aPlacedOrder(5, 1, 1, 'creating_order')];
      const sshProbe = fakeProbe(BANNER);
      expect(await checkOrder(aState({ placement: placed }), { marketplace, sshProbe }, NOW + 1000)).toMatchObject({
        ready: false,
        timedOut: false,
      });
      expect(sshProbe.asked).toEqual([]);
    });

    it('times out after the readiness window when ssh never answers, saying so', async () => {
      // Prepare
      const marketplace = runningOrder();
      const sshProbe = fakeProbe();
      const state = aState({ placement: placed });
      // Act
      const inside = await checkOrder(state, { marketplace, sshProbe }, NOW + 120_000);
      const after = await checkOrder(state, { marketplace, sshProbe }, NOW + 120_001);
      // Assess
      expect(inside).toMatchObject({ ready: false, timedOut: false, pending: 'ssh_not_answering' });
      expect(after).toMatchObject({
        ready: false,
        timedOut: true,
        reason: 'ready_timeout',
        pending: 'ssh_not_answering',
        ssh_probe: 'refused',
      });
      // The failure keeps the spec's text and says what was missing.
      expect(workflowResult({ ...state, check: after })).toEqual({
        success: false,
        error: 'Order creation timed out after 120 s: the order was running but its ssh endpoint did not answer',
      });
      expect(readyTimeoutMessage(120)).toBe('Order creation timed out after 120 s');
    });

    it('is ready when ssh answers on the poll after the window ends (a running order that answers is not cancelled)', async () => {
      expect(
        await checkOrder(
          aState({ placement: placed }),
          { marketplace: runningOrder(), sshProbe: fakeProbe(BANNER) },
          NOW + 130_000,
        ),
      ).toMatchObject({ ready: true, timedOut: false });
    });

    it.each([
      ['no ssh line', null],
      ['an unreadable ssh line', 'ssh root@ -p 0'],
    ])('waits (ssh_endpoint_unknown) for a running order with %s, without probing', async (_name, ssh) => {
      const sshProbe = fakeProbe(BANNER);
      expect(
        await checkOrder(aState({ placement: placed }), { marketplace: runningOrder(ssh), sshProbe }, NOW + 1000),
      ).toMatchObject({ ready: false, timedOut: false, pending: 'ssh_endpoint_unknown' });
      expect(sshProbe.asked).toEqual([]);
    });

    it('waits (ssh_address_refused) when the deployed probe refuses the address', async () => {
      const sshProbe = fakeProbe({ answered: false, reason: 'address_refused' });
      const check = await checkOrder(
        aState({ placement: placed }),
        { marketplace: runningOrder('ssh root@10.0.0.5 -p 22'), sshProbe },
        NOW + 121_000,
      );
      expect(check).toMatchObject({ ready: false, timedOut: true, pending: 'ssh_address_refused' });
      expect(check.ssh_probe).toBeUndefined();
    });

    it('without a probe (READINESS_PROBE=none), a running order is ready on the marketplace status alone', async () => {
      expect(
        await checkOrder(aState({ placement: placed }), { marketplace: runningOrder(null) }, NOW + 1000),
      ).toMatchObject({ ready: true });
    });
  });

  describe('with the login probe (READINESS_PROBE=ssh-login, issue 31 §4)', () => {
    const running = () => {
      const marketplace = new FakeMarketplace();
      marketplace.orders = [
        { ...aPlacedOrder(5, 1, 1, 'running'), connection: { ssh: 'ssh root@n1.example -p 1277' } },
      ];
      return marketplace;
    };
    const loginProbe = (...answers: SshProbeResult[]) => {
      const asked: { endpoint: SshEndpoint; password: string }[] = [];
      return {
        asked,
        probe: {
          login: async (endpoint: SshEndpoint, password: string) => {
            asked.push({ endpoint, password });
            return answers.shift() ?? ({ answered: false, reason: 'login_refused' } as const);
          },
        },
      };
    };

    it('is not ready while the banner answers but the password is refused, then ready with the host key', async () => {
      // Prepare: refused once, then accepted
      const login = loginProbe(
        { answered: false, reason: 'login_refused' },
        { answered: true, banner: 'SSH-2.0-x', host_key_sha256: 'SHA256:abc' },
      );
      const sshLogin = { probe: login.probe, password: async (taskId: string) => `pw-${taskId}` };
      const state = aState({ placement: placed });
      // Act
      const first = await checkOrder(state, { marketplace: running(), sshLogin }, NOW + 1000);
      const second = await checkOrder(state, { marketplace: running(), sshLogin }, NOW + 6000);
      // Assess
      expect(first).toMatchObject({ ready: false, timedOut: false, pending: 'ssh_login_refused' });
      expect(second).toMatchObject({ ready: true, ssh_host_key_sha256: 'SHA256:abc' });
      expect(login.asked.map((a) => a.password)).toEqual(['pw-task-1', 'pw-task-1']);
    });

    it("logs in with the password of the secret version the placement names (issue 38 §4), the API key's for a placement naming none", async () => {
      // Prepare: one order placed with the relay's secret, one placed before the switch
      const login = loginProbe({ answered: true, banner: 'SSH-2.0-x' }, { answered: true, banner: 'SSH-2.0-x' });
      const sshLogin = {
        probe: login.probe,
        password: async (taskId: string, key: string | undefined) => `${key ?? 'api-key'}:${taskId}`,
      };
      // Act
      await checkOrder(
        aState({ placement: { ...placed, password_key: '0123456789ab' } }),
        { marketplace: running(), sshLogin },
        NOW + 1000,
      );
      await checkOrder(aState({ placement: placed }), { marketplace: running(), sshLogin }, NOW + 1000);
      // Assess
      expect(login.asked.map((a) => a.password)).toEqual(['0123456789ab:task-1', 'api-key:task-1']);
    });

    it('times out with the spec text plus `ssh login refused` when the password never works', async () => {
      const sshLogin = { probe: loginProbe().probe, password: async () => 'pw' };
      const state = aState({ placement: placed });
      const check = await checkOrder(state, { marketplace: running(), sshLogin }, NOW + 120_001);
      expect(check).toMatchObject({ timedOut: true, pending: 'ssh_login_refused' });
      expect(workflowResult({ ...state, check })).toEqual({
        success: false,
        error: readyTimeoutMessage(120, 'ssh_login_refused'),
      });
      expect(readyTimeoutMessage(120, 'ssh_login_refused')).toBe(
        'Order creation timed out after 120 s: ssh login refused',
      );
    });
  });
});
