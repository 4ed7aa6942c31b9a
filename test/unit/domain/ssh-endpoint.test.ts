/** Reading an order's ssh endpoint from its ssh command line (issue 20 item 6). */
import { parseSshEndpoint } from '../../../lambdas/domain/leases/ssh-endpoint';

describe('Function: parseSshEndpoint', () => {
  it.each([
    ['ssh root@n1.msk.cloreai.ru -p 1277', { host: 'n1.msk.cloreai.ru', port: 1277 }],
    ['ssh -p 2222 root@host5', { host: 'host5', port: 2222 }],
    ['  ssh\troot@203.0.113.9   -p   22  ', { host: '203.0.113.9', port: 22 }],
    ['ssh -p1277 root@h.example', { host: 'h.example', port: 1277 }],
    ['ssh -o Port=1277 root@h.example', { host: 'h.example', port: 1277 }],
    ['ssh -oStrictHostKeyChecking=no -i ~/.ssh/id root@h.example -p 40022', { host: 'h.example', port: 40022 }],
    ['ssh -l root h.example -p 10022', { host: 'h.example', port: 10022 }],
    ['ssh root@h.example', { host: 'h.example', port: 22 }],
    ['ssh root@[2001:db8::7] -p 2200', { host: '2001:db8::7', port: 2200 }],
    ['ssh root@2001:db8::7 -p 2200', { host: '2001:db8::7', port: 2200 }],
    ['ssh://root@h.example:1277', { host: 'h.example', port: 1277 }],
    ['ssh root@h.example -p 1277 nvidia-smi -L', { host: 'h.example', port: 1277 }],
  ])('reads %j', (line, endpoint) => {
    expect(parseSshEndpoint(line)).toEqual(endpoint);
  });

  it.each([
    [null],
    [undefined],
    [''],
    ['ssh'],
    ['ssh -p 1277'],
    ['ssh root@ -p 22'],
    ['ssh root@h.example -p 0'],
    ['ssh root@h.example -p 70000'],
    ['ssh root@h.example -p twenty'],
    ['ssh root@h.example -p'],
    ['ssh root@h/../x -p 22'],
    ['ssh root@h.example;reboot -p 22'],
    ['ssh root@not:an:ip -p 22'],
    ['ssh://root@h.example:99999'],
  ])('refuses %j', (line) => {
    expect(parseSshEndpoint(line)).toBeUndefined();
  });
});
