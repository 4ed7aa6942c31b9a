import { createGetTaskHandler } from '../../../../lambdas/handlers/api/get-task';
import { apiEvent, lambdaContext, sign } from '../../../fixtures/events/api-event';
import { apiEnv, SECRET } from '../../../fakes/env';
import { FakeSlidingWindow } from '../../../fakes/sliding-window';
import { FakeTasks } from '../../../fakes/tasks';
import { parseResult } from '../../../helpers/parse-result';

const ID = '6f1c0d9e-1111-4222-8333-444455556666';

const setup = () => {
  const tasks = new FakeTasks();
  const handler = createGetTaskHandler(() => ({
    env: apiEnv(),
    window: new FakeSlidingWindow(),
    webhookSecrets: async () => [SECRET],
    tasks,
    now: () => 1_700_000_000_000,
  }));
  const get = async (id: string, signWith = SECRET) => {
    const path = `/webhook/tasks/${id}`;
    return parseResult(
      await handler(
        apiEvent({
          method: 'GET',
          path,
          pathParameters: { task_id: id },
          headers: { 'x-webhook-signature': sign(signWith, path) },
        }),
        lambdaContext(),
      ),
    );
  };
  return { tasks, get };
};

describe('Handler: get-task', () => {
  it('returns the task view: state, result and timestamps, without request or origin', async () => {
    // Prepare
    const { tasks, get } = setup();
    await tasks.create({
      task_id: ID,
      kind: 'cancel-order',
      state: 'queued',
      request: { order_id: 1, callback_url: 'https://cb.example/?token=t' },
      origin: { source: 'slack', responseUrl: 'https://hooks.slack.com/x' },
      created_at: '2023-11-14T22:13:20.000Z',
      updated_at: '2023-11-14T22:13:20.000Z',
    });
    await tasks.finish(ID, 'succeeded', { success: true, order_id: 1, status: 'cancelled' }, 1_700_000_010_000);
    // Act
    const result = await get(ID);
    // Assess
    expect(result.statusCode).toBe(200);
    expect(result.body).toEqual({
      task_id: ID,
      kind: 'cancel-order',
      state: 'succeeded',
      result: { success: true, order_id: 1, status: 'cancelled' },
      created_at: '2023-11-14T22:13:20.000Z',
      updated_at: '2023-11-14T22:13:30.000Z',
      finished_at: '2023-11-14T22:13:30.000Z',
    });
  });

  it('returns 404 Task not found for an unknown id', async () => {
    const { get } = setup();
    expect(await get(ID)).toMatchObject({ statusCode: 404, body: { error: 'Task not found' } });
  });

  it('returns 400 for an id that is not a UUID', async () => {
    const { get } = setup();
    expect(await get('not-a-task')).toMatchObject({ statusCode: 400, body: { error: 'Invalid task_id' } });
  });

  it('requires the webhook signature over the path', async () => {
    const { get } = setup();
    expect(await get(ID, 'wrong')).toMatchObject({ statusCode: 401, body: { error: 'Invalid signature' } });
  });
});
