/**
 * Where the key of the relay's own root passwords comes from (issue 38 §4): SSH_PASSWORD_SECRET_ARN's
 * AWSCURRENT and AWSPREVIOUS in AWS; locally SSH_PASSWORD_SECRET, else a value derived from
 * WEBHOOK_SECRET under its own label; never the marketplace API key.
 */
import {
  GetSecretValueCommand,
  ResourceNotFoundException,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { clearSecretCache, LOCAL_SSH_PASSWORD_LABEL, sshPasswordSecrets } from '../../../lambdas/adapters/secrets';
import { testEnv } from '../../fakes/env';

const ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:relay/ssh-password-AbCdEf';

describe('Function: sshPasswordSecrets', () => {
  const sm = mockClient(SecretsManagerClient);
  beforeEach(() => {
    sm.reset();
    clearSecretCache();
  });
  afterAll(() => sm.restore());

  it('locally derives the key from WEBHOOK_SECRET under its own label, not the webhook secret or the API key', async () => {
    const env = testEnv({ WEBHOOK_SECRET: 'whs', MARKETPLACE_API_KEY: 'mkey' });
    await expect(sshPasswordSecrets(env)).resolves.toEqual([`${LOCAL_SSH_PASSWORD_LABEL}whs`]);
  });

  it('locally takes SSH_PASSWORD_SECRET, then SSH_PASSWORD_SECRET_PREVIOUS', async () => {
    const env = testEnv({ WEBHOOK_SECRET: 'whs', SSH_PASSWORD_SECRET: 'new', SSH_PASSWORD_SECRET_PREVIOUS: 'old' });
    await expect(sshPasswordSecrets(env)).resolves.toEqual(['new', 'old']);
  });

  it('refuses to derive passwords with no secret at all', async () => {
    await expect(sshPasswordSecrets(testEnv({ MARKETPLACE_API_KEY: 'mkey' }))).rejects.toThrow(
      /no ssh password secret configured/,
    );
  });

  it('reads AWSCURRENT and AWSPREVIOUS from Secrets Manager, the previous one only once it exists', async () => {
    // Prepare: before the first rotation there is no AWSPREVIOUS
    sm.on(GetSecretValueCommand, { SecretId: ARN, VersionStage: 'AWSCURRENT' }).resolves({ SecretString: 'current' });
    sm.on(GetSecretValueCommand, { SecretId: ARN, VersionStage: 'AWSPREVIOUS' }).rejects(
      new ResourceNotFoundException({ message: 'no version', $metadata: {} }),
    );
    const env = testEnv({ SSH_PASSWORD_SECRET_ARN: ARN, WEBHOOK_SECRET: 'whs', SSH_PASSWORD_SECRET: 'ignored' });
    // Act + Assess
    await expect(sshPasswordSecrets(env)).resolves.toEqual(['current']);
    clearSecretCache();
    sm.on(GetSecretValueCommand, { SecretId: ARN, VersionStage: 'AWSPREVIOUS' }).resolves({ SecretString: 'old' });
    await expect(sshPasswordSecrets(env)).resolves.toEqual(['current', 'old']);
  });
});
