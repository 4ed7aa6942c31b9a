/** Kept for bench/leases.ts (outside test/): the shared fakes it uses. */
export { FakeEventSender } from '../../fakes/event-sender';
export { FakeMarketplace } from '../../fakes/marketplace';
export { FakeNotifier } from '../../fakes/notifier';
export { seedLeases } from '../../fakes/seed-leases';
