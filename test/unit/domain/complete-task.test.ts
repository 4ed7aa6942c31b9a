import { resultText } from '../../../lambdas/domain/requests/complete-task';

describe('Function: resultText (set-spot-price)', () => {
  it('names the price in the marketplace unit and in USD per hour', () => {
    expect(
      resultText('t1', {
        success: true,
        order_id: 42,
        desired_price: 1540,
        currency: 'CLORE-Blockchain',
        desired_price_usd_per_hour: 0.0801878,
      }),
    ).toBe('Task t1: order 42 spot price set to 1540 CLORE-Blockchain per day ($0.0801878/hr)');
  });

  it("leaves the USD part out when the server's rates were not known", () => {
    expect(
      resultText('t1', {
        success: true,
        order_id: 42,
        desired_price: 0.0001,
        currency: 'bitcoin',
        desired_price_usd_per_hour: null,
      }),
    ).toBe('Task t1: order 42 spot price set to 0.0001 bitcoin per day');
  });
});
