/**
 * `npm start` publishes the local relay's address card (contract/local-relay-file.ts) for the CLI:
 * `.relay/local-<port>.json` (one card per running relay), mode 0600 in a 0700 folder that ignores
 * itself in git, written atomically, and removed on stop unless another `npm start` has replaced it
 * meanwhile.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { LOCAL_RELAY_DIR, isLoopbackUrl, localRelayFile, portOfUrl } from '../contract/local-relay-file';
import type { LocalRelayCard } from '../contract/local-relay-file';

export interface PublishedCard {
  readonly file: string;
  /** Removes the card if it is still this process's. */
  remove(): void;
}

/** Writes the card of the relay at `url` running with `env`'s secrets under `dir` (npm start's cwd). */
export const publishLocalRelay = (
  runtime: { readonly url: string; readonly env: Readonly<Record<string, string>> },
  dir: string,
  now: Date = new Date(),
): PublishedCard => {
  if (!isLoopbackUrl(runtime.url))
    throw new Error(`the local relay's URL must be loopback to publish it, got ${runtime.url}`);
  const folder = path.join(dir, LOCAL_RELAY_DIR);
  const file = path.join(dir, localRelayFile(portOfUrl(runtime.url) ?? 0));
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  chmodSync(folder, 0o700);
  // The folder keeps itself out of git even in a checkout whose .gitignore does not name it.
  if (!existsSync(path.join(folder, '.gitignore')))
    writeFileSync(path.join(folder, '.gitignore'), '*\n', { mode: 0o600 });
  const card: LocalRelayCard = {
    url: runtime.url,
    webhook_secret: runtime.env.WEBHOOK_SECRET,
    callback_signing_secret: runtime.env.CALLBACK_SIGNING_SECRET,
    pid: process.pid,
    started_at: now.toISOString(),
  };
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, JSON.stringify(card, null, 2) + '\n', { mode: 0o600 });
  chmodSync(temp, 0o600);
  renameSync(temp, file);
  return {
    file,
    remove() {
      try {
        const current = JSON.parse(readFileSync(file, 'utf8')) as Partial<LocalRelayCard>;
        if (current.pid === process.pid && current.url === runtime.url) rmSync(file, { force: true });
      } catch {
        // Already gone or unreadable: nothing of ours to remove.
      }
    },
  };
};
