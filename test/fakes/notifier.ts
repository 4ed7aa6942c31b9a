/** The Notifier port in memory: records callbacks, chat texts and Slack replies. */
import type { Notifier, TaskResult } from '../../lambdas/domain/ports';

export class FakeNotifier implements Notifier {
  public readonly callbacks: { url: string; taskId: string; result: TaskResult }[] = [];
  public readonly chats: string[] = [];
  public async callback(url: string, taskId: string, result: TaskResult): Promise<boolean> {
    this.callbacks.push({ url, taskId, result });
    return true;
  }
  public async chat(text: string): Promise<void> {
    this.chats.push(text);
  }
  /** Slack response_url replies. */
  public readonly slackResponses: { url: string; text: string }[] = [];
  public async slackResponse(url: string, text: string): Promise<void> {
    this.slackResponses.push({ url, text });
  }
}
