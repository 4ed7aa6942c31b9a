import {
  discordContent,
  orderCancelledText,
  orderReadyText,
  priceAlertMatchedText,
} from '../../../lambdas/domain/requests/chat-messages';

describe('Module: chat-messages', () => {
  it('names the order, its GPUs and the ssh command when an order is ready', () => {
    const text = orderReadyText({
      order_id: 123,
      gpu: ['RTX 4090', 'RTX 4090'],
      ssh_connection: 'ssh -p 2222 root@1.2.3.4',
    });
    expect(text).toContain('123');
    expect(text).toContain('RTX 4090, RTX 4090');
    expect(text).toContain('ssh -p 2222 root@1.2.3.4');
  });

  it('names the cancelled order', () => {
    expect(orderCancelledText(77)).toBe('Order 77 cancelled');
  });

  it('names the GPU, price and target of a matched price alert', () => {
    const text = priceAlertMatchedText('A100', 0.42, 0.5, 'task-2');
    expect(text).toContain('A100');
    expect(text).toContain('$0.42/hr');
    expect(text).toContain('$0.5/hr');
    expect(text).toContain('task-2');
  });

  it('keeps short Discord content as is', () => {
    expect(discordContent('hello')).toBe('hello');
    expect(discordContent('x'.repeat(2000))).toBe('x'.repeat(2000));
  });

  it('cuts long Discord content to at most 2000 characters', () => {
    const out = discordContent('y'.repeat(5000));
    expect(out).toHaveLength(2000);
    expect(out.endsWith('…')).toBe(true);
  });

  it('does not split a surrogate pair at the cut', () => {
    const fits = discordContent(`${'a'.repeat(1997)}😀${'b'.repeat(10)}`);
    const straddles = discordContent(`${'a'.repeat(1998)}😀${'b'.repeat(10)}`);
    expect(fits).toBe(`${'a'.repeat(1997)}😀…`);
    expect(straddles).toBe(`${'a'.repeat(1998)}…`);
  });
});
