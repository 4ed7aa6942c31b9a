/**
 * The login readiness probe (READINESS_PROBE=ssh-login, issue 31 §4) on loopback: one probe is a TCP
 * connect, ssh2's key exchange, a password login and the close, against the simulator's ssh server
 * (local/simulator/ssh-endpoints.ts). Median and p95 over RUNS sequential probes, for an accepted and
 * for a refused password. Run alone: `npx tsx bench/ssh-login.ts`.
 */
import { performance } from 'node:perf_hooks';
import { probeSshLogin } from '../lambdas/adapters/ssh-login-probe';
import { SimSshEndpoints } from '../local/simulator/ssh-endpoints';

const RUNS = 40;
const PASSWORD = 'benchPassword123';

const quantile = (xs: readonly number[], q: number): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};

export interface SshLoginBench {
  readonly runs: number;
  readonly acceptedMsMedian: number;
  readonly acceptedMsP95: number;
  readonly refusedMsMedian: number;
  readonly refusedMsP95: number;
}

export const benchSshLogin = async (runs = RUNS): Promise<SshLoginBench> => {
  const endpoints = new SimSshEndpoints(
    () => true,
    (_order, password) => password === PASSWORD,
  );
  try {
    const endpoint = await endpoints.open(1);
    const time = async (password: string, expectAnswered: boolean): Promise<number[]> => {
      const times: number[] = [];
      for (let i = 0; i < runs; i += 1) {
        const started = performance.now();
        const result = await probeSshLogin(endpoint, { allowPrivate: true, password, timeoutMs: 5_000 });
        times.push(performance.now() - started);
        if (result.answered !== expectAnswered) throw new Error(`unexpected probe result ${JSON.stringify(result)}`);
      }
      return times;
    };
    await time(PASSWORD, true); // warm-up: module load and JIT
    const accepted = await time(PASSWORD, true);
    const refused = await time('wrong', false);
    const round = (n: number) => Math.round(n * 10) / 10;
    return {
      runs,
      acceptedMsMedian: round(quantile(accepted, 0.5)),
      acceptedMsP95: round(quantile(accepted, 0.95)),
      refusedMsMedian: round(quantile(refused, 0.5)),
      refusedMsP95: round(quantile(refused, 0.95)),
    };
  } finally {
    await endpoints.closeAll();
  }
};

if (require.main === module) {
  void benchSshLogin().then((figures) => console.log(JSON.stringify(figures)));
}
