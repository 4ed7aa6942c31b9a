/**
 * Dependencies of the two tasks that deliver results (ReportResult, ExecutionEnded). A module of its
 * own so that the other task handlers never import the notifier: esbuild bundles whatever a module
 * imports, so keeping it out of ./deps.ts is what keeps it out of their bundles.
 */
import type { LeaseBook } from '../../domain/leases/lease-ports';
import type { Notifier } from '../../domain/ports';
import { relayEnv } from '../../adapters/env';
import { leaseBookFromEnv } from '../../adapters/from-env';
import { notifierFromEnv } from '../../adapters/notifier-from-env';
import { lazy } from '../../adapters/lazy';
import { claims, hosts, marketplace, spend, tasks } from './deps';

const notifier = /* @__PURE__ */ lazy<Notifier>(() => notifierFromEnv(relayEnv()));
const leases = /* @__PURE__ */ lazy<LeaseBook>(() => leaseBookFromEnv(relayEnv()));

export const reportResultDeps = async () => ({
  tasks: tasks(),
  notifier: notifier(),
  claims: claims(),
  leases: leases(),
  spend: spend(),
  hosts: hosts(),
});
export const executionEndedDeps = async () => ({
  marketplace: marketplace(),
  tasks: tasks(),
  notifier: notifier(),
  claims: claims(),
  spend: spend(),
});
