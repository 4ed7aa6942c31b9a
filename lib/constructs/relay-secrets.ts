/** The relay's secrets in Secrets Manager. Values never pass through CDK context or the template. */
import { RemovalPolicy } from 'aws-cdk-lib';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';

/** The relay's secrets, by the name functions ask for them. */
export type SecretName = 'webhook' | 'apiKey' | 'chat' | 'slack' | 'callback' | 'callerKeys' | 'sshPassword';

/** Env var carrying each secret's ARN (lambdas/adapters/env.ts). */
export const SECRET_ARN_VARS: Readonly<Record<SecretName, string>> = {
  webhook: 'WEBHOOK_SECRET_ARN',
  apiKey: 'MARKETPLACE_API_KEY_ARN',
  chat: 'CHAT_WEBHOOKS_SECRET_ARN',
  slack: 'SLACK_SIGNING_SECRET_ARN',
  callback: 'CALLBACK_SIGNING_SECRET_ARN',
  callerKeys: 'CALLER_KEYS_SECRET_ARN',
  sshPassword: 'SSH_PASSWORD_SECRET_ARN',
};

export class RelaySecrets extends Construct {
  /** HMAC key of X-Webhook-Signature; generated at deploy (64 alphanumerics). */
  public readonly webhookSecret: secretsmanager.Secret;
  /** The marketplace `auth` key; set by the operator after deploy. */
  public readonly marketplaceApiKey: secretsmanager.Secret;
  /** JSON {"slack_webhook_url": "...", "discord_webhook_url": "..."}; empty values skip that chat. */
  public readonly chatWebhooks: secretsmanager.Secret;
  /** Slack app signing secret; empty = no Slack verification (the spec's behaviour). */
  public readonly slackSigningSecret: secretsmanager.Secret;
  /**
   * Standard Webhooks key signing callbacks and lifecycle events (never requests). Generated as 48
   * letters and digits: valid base64 of a 36-byte key, read as `whsec_<value>` (Secrets Manager cannot
   * generate the prefix; lambdas/adapters/secrets.ts adds it). An operator may put `whsec_…` values.
   */
  public readonly callbackSigningSecret: secretsmanager.Secret;
  /** KMS key (rotated yearly) under which the caller-keys secret is encrypted (issue 24). */
  public readonly callerKeysKey: kms.Key;
  /** The data key caller key secrets are sealed with (AES-256-GCM, lambdas/adapters/caller-key-sealer.ts); KMS-encrypted. */
  public readonly callerKeysSecret: secretsmanager.Secret;
  /**
   * The key the relay's own root password of each order is derived from (HMAC with the task id,
   * lambdas/domain/hosts/ssh-password.ts; issue 38 §4). Generated at deploy (64 alphanumerics) and
   * readable by PlaceOrder (sends the password) and CheckOrder (logs in with it) only; never the
   * marketplace API key, which eight functions read.
   */
  public readonly sshPasswordSecret: secretsmanager.Secret;

  public constructor(scope: Construct, id: string) {
    super(scope, id);
    this.webhookSecret = new secretsmanager.Secret(this, 'WebhookSecret', {
      description: 'GPU relay: HMAC key for X-Webhook-Signature (requests only)',
      generateSecretString: { passwordLength: 64, excludePunctuation: true, includeSpace: false },
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.marketplaceApiKey = new secretsmanager.Secret(this, 'MarketplaceApiKey', {
      description: 'GPU relay: marketplace API key (auth header); set it after deploy',
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.chatWebhooks = new secretsmanager.Secret(this, 'ChatWebhooks', {
      description: 'GPU relay: JSON {"slack_webhook_url":"","discord_webhook_url":""}',
      generateSecretString: {
        secretStringTemplate: JSON.stringify({ slack_webhook_url: '', discord_webhook_url: '' }),
        generateStringKey: 'unused',
      },
      removalPolicy: RemovalPolicy.RETAIN,
    });
    // Created holding {"signing_secret":""} (= no verification, the spec's behaviour) rather than a
    // random value, which would make every real Slack request fail verification until replaced.
    this.slackSigningSecret = new secretsmanager.Secret(this, 'SlackSigningSecret', {
      description:
        'GPU relay: Slack signing secret, as {"signing_secret":"..."} or the raw value; empty skips Slack verification',
      generateSecretString: {
        secretStringTemplate: JSON.stringify({ signing_secret: '' }),
        generateStringKey: 'unused',
      },
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.callbackSigningSecret = new secretsmanager.Secret(this, 'CallbackSigningSecret', {
      description:
        'GPU relay: Standard Webhooks key for callbacks and events; receivers use whsec_ + this value (or a whsec_ value put here)',
      // 48 characters of [A-Za-z0-9] are base64 of 36 bytes (about 285 bits): no padding needed.
      generateSecretString: {
        passwordLength: 48,
        excludePunctuation: true,
        includeSpace: false,
        requireEachIncludedType: false,
      },
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.callerKeysKey = new kms.Key(this, 'CallerKeysKey', {
      description: 'GPU relay: encrypts the data key of caller key secrets',
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.callerKeysSecret = new secretsmanager.Secret(this, 'CallerKeysSecret', {
      description: 'GPU relay: data key sealing caller key secrets in the table (never leaves AWS)',
      encryptionKey: this.callerKeysKey,
      generateSecretString: { passwordLength: 64, excludePunctuation: true, includeSpace: false },
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.sshPasswordSecret = new secretsmanager.Secret(this, 'SshPasswordSecret', {
      description: "GPU relay: key of the relay's own root password of each order (readiness login)",
      generateSecretString: { passwordLength: 64, excludePunctuation: true, includeSpace: false },
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }

  /**
   * Binds secrets to a function in one call: for each, the `<NAME>_ARN` variable of the env contract
   * (lambdas/adapters/env.ts) and read access, least privilege by name. The only way a function
   * learns a secret's ARN, so it never sees the ARN of a secret it may not read.
   */
  public bindTo(fn: lambda.Function, which: readonly SecretName[]): void {
    const secrets: Record<SecretName, secretsmanager.ISecret> = {
      webhook: this.webhookSecret,
      apiKey: this.marketplaceApiKey,
      chat: this.chatWebhooks,
      slack: this.slackSigningSecret,
      callback: this.callbackSigningSecret,
      callerKeys: this.callerKeysSecret,
      sshPassword: this.sshPasswordSecret,
    };
    for (const name of which) fn.addEnvironment(SECRET_ARN_VARS[name], secrets[name].secretArn);
    for (const name of which) secrets[name].grantRead(fn);
  }
}
