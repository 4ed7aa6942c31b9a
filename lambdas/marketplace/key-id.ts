import { createHash } from 'node:crypto';

/**
 * The identity of an API key for pacing and metrics: the first 16 hex characters of its SHA-256.
 * Stored in DynamoDB instead of the key, which is a secret.
 */
export const apiKeyId = (apiKey: string): string => createHash('sha256').update(apiKey).digest('hex').slice(0, 16);
