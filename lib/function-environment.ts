/** The environment every relay function gets: the configured settings under their env names (contract/settings.ts). */
import { encodeSetting, SETTINGS, type Setting } from '../contract/settings';
import type { RelayConfig } from './config';

export const configEnvironment = (config: RelayConfig): Record<string, string> =>
  Object.fromEntries(
    (Object.entries(SETTINGS) as [keyof RelayConfig, Setting][])
      .filter(([key, s]) => s.deployed !== false && config[key] !== undefined)
      .map(([key, s]) => [s.env, encodeSetting(s.kind, config[key])]),
  );
