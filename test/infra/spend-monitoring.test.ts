/**
 * Spending (issue 24) in the stack: the per-key widget always, the SpendNearDailyLimit alarm at 80 % only
 * with a limit (to the alarm topic, with its runbook entry), the table's TTL that keeps the ledger 400
 * days, and the grants of the spend item families (who reserves, settles and reads).
 */
import { App, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Monitoring } from '../../lib/constructs/monitoring';
import { RelayTable } from '../../lib/constructs/relay-table';
import { tableAccessOf } from '../../lib/constructs/table-access';
import { RELAY_TABLE } from '../../contract/resources';

const build = (spendLimitUsdPerDay?: number) => {
  const stack = new Stack(new App(), 'Spend', { env: { account: '111111111111', region: 'eu-west-1' } });
  new RelayTable(stack, 'RelayTable', { deletionProtection: false });
  const stateMachine = new sfn.StateMachine(stack, 'Workflow', {
    definitionBody: sfn.DefinitionBody.fromChainable(new sfn.Pass(stack, 'Noop')),
  });
  const httpApi = new apigwv2.HttpApi(stack, 'Api');
  const deadLetterQueue = new sqs.Queue(stack, 'Dlq');
  new Monitoring(stack, 'Monitoring', {
    deadLetterQueue,
    stateMachine,
    httpApi,
    functions: {},
    ...(spendLimitUsdPerDay !== undefined ? { spendLimitUsdPerDay } : {}),
  });
  return { stack, template: Template.fromStack(stack) };
};

describe('Spending in the stack', () => {
  it("alarms at 80 % of SPEND_LIMIT_USD_PER_DAY on the day's used total, to the alarm topic, naming its runbook entry", () => {
    const { template } = build(50);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'SpendUsedTodayUsd',
      Namespace: 'GpuRelay',
      Statistic: 'Maximum',
      Threshold: 40,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      AlarmDescription: Match.stringLikeRegexp('RUNBOOK: SpendNearDailyLimit'),
      AlarmActions: Match.anyValue(),
      OKActions: Match.anyValue(),
    });
  });

  it('has no spending alarm without a limit, and the per-key widget either way', () => {
    const { stack, template } = build();
    expect(
      Object.values(template.findResources('AWS::CloudWatch::Alarm')).filter((a) =>
        JSON.stringify(a).includes('SpendUsedTodayUsd'),
      ),
    ).toHaveLength(0);
    const dashboard = Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0] as {
      Properties: { DashboardBody: unknown };
    };
    const body = JSON.stringify(stack.resolve(dashboard.Properties.DashboardBody));
    expect(body).toContain('Spending (USD per hour, by caller key)');
    expect(body).toContain('MetricName=\\\\\\"SpendReservedUsd\\\\\\"');
    expect(body).toContain('MetricName=\\\\\\"SpendSettledUsd\\\\\\"');
  });

  it("expires ledger and day items through the table's TTL attribute", () => {
    const { template } = build();
    template.hasResourceProperties(
      'AWS::DynamoDB::Table',
      Match.objectLike({ TimeToLiveSpecification: { AttributeName: RELAY_TABLE.ttlAttribute, Enabled: true } }),
    );
  });

  it('grants the spend items only to the functions that reserve, settle or read them', () => {
    expect(tableAccessOf('WorkflowReserveQuota').write).toEqual(expect.arrayContaining(['SPEND#*', 'SPENDRES#*']));
    expect(tableAccessOf('WorkflowReserveQuota').write).not.toContain('LEDGER#*');
    for (const user of ['WorkflowReportResult', 'WorkflowExecutionEnded', 'FleetWatch'] as const) {
      expect(tableAccessOf(user).write).toEqual(expect.arrayContaining(['SPEND#*', 'SPENDRES#*', 'LEDGER#*']));
    }
    expect(tableAccessOf('JobWorker').write).toEqual(expect.arrayContaining(['SPEND#*', 'SPENDRES#*']));
    expect(tableAccessOf('ApiSpend')).toEqual({
      write: expect.not.arrayContaining(['SPEND#*']),
      read: expect.arrayContaining(['SPEND#*']),
    });
    expect(tableAccessOf('ApiSpend').read).not.toContain('SPENDRES#*');
    expect(tableAccessOf('ApiCreateOrder').write).not.toContain('SPEND#*');
  });
});
