/** The relay's host-filter and choice defaults (issue 31) from the environment, as RequestDefaults take them. */
import type { RequestDefaults } from '../domain/requests/request-rules';
import type { RelayEnv } from './env';

export const hostDefaults = (
  env: Pick<RelayEnv, 'DEFAULT_MIN_RELIABILITY' | 'DEFAULT_MIN_RATING' | 'DEFAULT_MIN_RATING_COUNT' | 'DEFAULT_PREFER'>,
): Pick<RequestDefaults, 'minReliability' | 'minRating' | 'minRatingCount' | 'prefer'> => ({
  ...(env.DEFAULT_MIN_RELIABILITY !== undefined ? { minReliability: env.DEFAULT_MIN_RELIABILITY } : {}),
  ...(env.DEFAULT_MIN_RATING !== undefined ? { minRating: env.DEFAULT_MIN_RATING } : {}),
  ...(env.DEFAULT_MIN_RATING_COUNT !== undefined ? { minRatingCount: env.DEFAULT_MIN_RATING_COUNT } : {}),
  prefer: env.DEFAULT_PREFER as RequestDefaults['prefer'],
});
