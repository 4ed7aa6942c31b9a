/** Fuzz: POST /slack/command (form bodies, optional Slack signature) through the real middleware chain. */
import fc from 'fast-check';
import { fuzzParameters } from './fuzz-kit';
import { outcomes, reportOutcomes, slackProperty } from './properties';

afterAll(reportOutcomes);

describe('Fuzz: SlackCommand', () => {
  it('never answers 5xx, queues exactly the commands it confirms in channel, nothing else', async () => {
    await fc.assert(slackProperty(), fuzzParameters());
    expect(Object.keys(outcomes.SlackCommand).sort()).toEqual(['200 ephemeral', '200 in_channel', '401', '403', '413']);
  });
});
