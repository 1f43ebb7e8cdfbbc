import { generate } from 'selfsigned';
import { redirectHost } from '../../rest/plain-http-redirect';

let cert: string;
beforeAll(async () => {
  const pems = await generate([{ name: 'commonName', value: 'pay.example.com' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    extensions: [
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'pay.example.com' },
          { type: 2, value: '*.shops.example.com' },
          { type: 7, ip: '192.0.2.10' },
        ],
      },
    ],
  } as never);
  cert = pems.cert;
});

describe('the host a plain-HTTP redirect names without PUBLIC_URL', () => {
  it('should keep a Host the certificate is valid for, wildcards included', () => {
    const host = redirectHost({ bindHost: '0.0.0.0', cert });
    expect(host('pay.example.com:8080', '10.1.2.3')).toBe('pay.example.com');
    expect(host('Pay.Example.Com', '10.1.2.3')).toBe('pay.example.com');
    expect(host('berlin.shops.example.com', '10.1.2.3')).toBe('berlin.shops.example.com');
    expect(host('192.0.2.10:80', '10.1.2.3')).toBe('192.0.2.10');
  });

  it('should keep localhost, the bound HOST and the address the connection reached', () => {
    const host = redirectHost({ bindHost: '198.51.100.4', cert });
    expect(host('localhost:8080', '198.51.100.4')).toBe('localhost');
    expect(host('198.51.100.4:8080', '198.51.100.4')).toBe('198.51.100.4');
    const anyInterface = redirectHost({ bindHost: '::', cert });
    expect(anyInterface('[fd00::5]:8080', '::ffff:10.0.0.1')).toBe('10.0.0.1');
    expect(anyInterface('[fd00::5]:8080', 'fd00::5')).toBe('[fd00::5]');
    expect(anyInterface('10.0.0.1', '::ffff:10.0.0.1')).toBe('10.0.0.1');
  });

  it('should answer any other Host with the address the connection reached', () => {
    const host = redirectHost({ bindHost: '0.0.0.0', cert });
    expect(host('evil.example', '10.1.2.3')).toBe('10.1.2.3');
    expect(host('a.b.shops.example.com', '10.1.2.3')).toBe('10.1.2.3'); // a wildcard covers one label
    expect(host('pay.example.com.evil.example', '10.1.2.3')).toBe('10.1.2.3');
    expect(host('pay.example.com/x', '10.1.2.3')).toBe('10.1.2.3');
    expect(host(undefined, 'fd00::7')).toBe('[fd00::7]');
    expect(host('evil.example', undefined)).toBe('localhost');
  });
});
