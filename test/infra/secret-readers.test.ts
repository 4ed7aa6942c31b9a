/**
 * Who may read which secret (issue 38 §4), decided by the local runtime's permission checks
 * (IAM_CHECKS=enforce) on the synthesized stack: for every relay function and every secret, whether
 * `secretsmanager:GetSecretValue` on it is allowed. The table below is the whole answer, so a grant
 * added or dropped anywhere fails here. The relay's root password key is readable by PlaceOrder and
 * CheckOrder alone; the marketplace API key by the functions that call the marketplace; the caller
 * keys' data key by the functions that seal or open with it (lib/constructs/webhook-api.ts
 * `routeSecrets` says why every signed route is one of them).
 */
import { ROUTES } from '../../contract/routes';
import { IamChecker } from '../../local/iam/checker';
import { REPORT_LOCAL_NAMES } from '../../local/iam-report';
import { synthesizeStackModel, type StackModel } from '../../local/stack-model';

type Resources = Record<string, { Type: string }>;

const SIGNED = ROUTES.filter((r) => r.signed).map((r) => `Api${r.id}`);

/** Every secret's readers, by construct id (`Secrets<id>`) and model function name. */
const EXPECTED_READERS: Record<string, readonly string[]> = {
  WebhookSecret: SIGNED,
  MarketplaceApiKey: [
    'ApiMarketplaceSummary',
    'FleetWatch',
    'JobWorker',
    'WorkflowCancelOrder',
    'WorkflowCheckOrder',
    'WorkflowExecutionEnded',
    'WorkflowFindServer',
    'WorkflowPlaceOrder',
  ],
  ChatWebhooks: ['FleetWatch', 'JobWorker', 'WorkflowExecutionEnded', 'WorkflowReportResult'],
  SlackSigningSecret: ['ApiSlackCommand'],
  CallbackSigningSecret: ['FleetWatch', 'JobWorker', 'WorkflowExecutionEnded', 'WorkflowReportResult'],
  CallerKeysSecret: [
    ...SIGNED,
    'ApiSlackCommand',
    'FleetWatch',
    'WorkflowCheckOrder',
    'WorkflowPlaceOrder',
    'WorkflowReportResult',
  ],
  SshPasswordSecret: ['WorkflowCheckOrder', 'WorkflowPlaceOrder'],
};

describe('Secret readers under the local IAM checks (the synthesized policies)', () => {
  let model: StackModel;
  let checker: IamChecker;
  /** Secret construct id → its ARN as the checker resolves it. */
  let secretArns: Record<string, string>;

  beforeAll(() => {
    model = synthesizeStackModel();
    checker = new IamChecker({ model, local: REPORT_LOCAL_NAMES, mode: 'enforce', log: () => undefined });
    const resources = model.template.Resources as Resources;
    secretArns = Object.fromEntries(
      Object.keys(resources)
        .filter((id) => resources[id].Type === 'AWS::SecretsManager::Secret')
        .map((id) => [
          id.replace(/^Secrets/, '').replace(/[0-9A-F]{8}$/, ''),
          `arn:aws:secretsmanager:us-east-1:000000000000:secret:${id}`,
        ]),
    );
  });

  const mayRead = (fn: string, arn: string): Promise<boolean> =>
    checker
      .runAs(fn, () => checker.checkCall('SecretsManager', 'GetSecretValueCommand', { SecretId: arn }))
      .then(
        () => true,
        () => false,
      );

  it('lets exactly the listed functions read each secret, and no function any other', async () => {
    // Act
    const readers: Record<string, string[]> = {};
    for (const [secret, arn] of Object.entries(secretArns)) {
      readers[secret] = [];
      for (const fn of model.functions) if (await mayRead(fn.name, arn)) readers[secret].push(fn.name);
      readers[secret].sort();
    }

    // Assert
    expect(readers).toEqual(
      Object.fromEntries(Object.entries(EXPECTED_READERS).map(([secret, fns]) => [secret, [...fns].sort()])),
    );
  });

  it("refuses the root password key to every function but PlaceOrder and CheckOrder, the public summary's included", async () => {
    // Prepare
    const arn = secretArns.SshPasswordSecret;
    expect(arn).toBeDefined();

    // Act
    const summary = checker.runAs('ApiMarketplaceSummary', () =>
      checker.checkCall('SecretsManager', 'GetSecretValueCommand', { SecretId: arn }),
    );

    // Assert
    await expect(summary).rejects.toMatchObject({
      name: 'AccessDeniedException',
      message: expect.stringMatching(/secretsmanager:GetSecretValue.*SshPasswordSecret/),
    });
    await expect(mayRead('WorkflowPlaceOrder', arn)).resolves.toBe(true);
    await expect(mayRead('WorkflowCheckOrder', arn)).resolves.toBe(true);
    for (const fn of ['WorkflowFindServer', 'WorkflowCancelOrder', 'JobWorker', 'FleetWatch'])
      await expect(mayRead(fn, arn)).resolves.toBe(false);
  });
});
