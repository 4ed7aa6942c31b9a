import { isRefusedAddress, refusedUrlReason } from '../../../lambdas/domain/address-policy';

describe('Function: isRefusedAddress', () => {
  it.each([
    '127.0.0.1',
    '127.255.255.254',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '169.254.0.1',
    '100.64.0.1',
    '100.127.255.255',
    '0.0.0.0',
    '0.1.2.3',
    '224.0.0.1',
    '239.255.255.250',
    '240.0.0.1',
    '255.255.255.255',
    '192.0.2.10',
    '::1',
    '::',
    '[::1]',
    'fc00::1',
    'fd12:3456:789a::1',
    'fe80::1',
    'fe80::1%eth0',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:169.254.169.254',
    '::ffff:10.0.0.1',
    '64:ff9b::127.0.0.1',
    '64:ff9b::a9fe:a9fe',
    '2002:7f00:1::',
    '2001:db8::1',
    '::127.0.0.1',
    'not-an-ip',
    '',
  ])('refuses %s', (ip) => {
    expect(isRefusedAddress(ip)).toBe(true);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '172.15.255.255',
    '172.32.0.1',
    '100.63.255.255',
    '100.128.0.1',
    '169.253.255.255',
    '11.0.0.1',
    '223.255.255.255',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
    '2002:808:808::',
  ])('allows public %s', (ip) => {
    expect(isRefusedAddress(ip)).toBe(false);
  });
});

describe('Function: refusedUrlReason', () => {
  it.each([
    ['ftp://example.com/x'],
    ['file:///etc/passwd'],
    ['javascript:alert(1)'],
    ['/relative/path'],
    ['not a url'],
    ['http://localhost:8080/cb'],
    ['http://LOCALHOST./cb'],
    ['http://app.localhost/cb'],
    ['http://127.0.0.1/cb'],
    ['http://[::1]:5000/'],
    ['http://169.254.169.254/latest/meta-data/'],
    ['http://2130706433/'],
    ['http://0x7f.1/'],
    ['https://[::ffff:127.0.0.1]/'],
    ['http://10.0.0.5:80/'],
  ])('refuses %s', (url) => {
    expect(refusedUrlReason(url)).toEqual(expect.any(String));
  });

  it.each([
    ['https://example.com/hook'],
    ['http://example.com:8080/cb?x=1'],
    ['https://8.8.8.8/'],
    ['https://[2606:4700:4700::1111]/'],
  ])('accepts %s', (url) => {
    expect(refusedUrlReason(url)).toBeUndefined();
  });
});
