/** The Notifier port in memory: records callbacks and chat texts. */
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
}
