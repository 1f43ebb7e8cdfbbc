import type { LookupAddress, LookupOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';
import {
  FORBIDDEN_ADDRESS_CODE,
  LIVE_WEBHOOK_PORTS,
  checkWebhookUrl,
  destinationPolicy,
  forbiddenAddressClass,
  isForbiddenAddress,
  parseIPv6,
  safeLookup,
} from '../../../src/core/network/address-policy';

const PUBLIC_V4 = '93.184.216.34';
const PUBLIC_V6 = '2606:2800:220:1:248:1893:25c8:1946';

const fixed = (addresses: string[]) => async (): Promise<string[]> => addresses;
const failing = async (): Promise<string[]> => {
  throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
};

function lookupReturning(...answers: Array<Array<{ address: string; family: number }>>): LookupFunction & { calls: number } {
  const fn = ((_host: string, _opts: LookupOptions, cb: (err: NodeJS.ErrnoException | null, address: LookupAddress[]) => void) => {
    const answer = answers[Math.min(fn.calls, answers.length - 1)];
    fn.calls += 1;
    process.nextTick(() => cb(null, answer));
  }) as unknown as LookupFunction & { calls: number };
  fn.calls = 0;
  return fn;
}

function runLookup(lookup: LookupFunction, host: string, options: LookupOptions): Promise<{ err: NodeJS.ErrnoException | null; address: unknown; family?: number }> {
  return new Promise((resolve) => lookup(host, options, (err, address, family) => resolve({ err, address, family })));
}

describe('isForbiddenAddress (IPv4)', () => {
  it.each([
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['100.64.0.1', 'shared'],
    ['100.127.255.255', 'shared'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['192.0.0.170', 'reserved'],
    ['192.88.99.1', 'reserved'],
    ['192.0.2.10', 'documentation'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
  ])('should refuse %s as %s', (ip, cls) => {
    expect(forbiddenAddressClass(ip)).toBe(cls);
    expect(isForbiddenAddress(ip)).toBe(true);
  });

  it.each(['8.8.8.8', '1.1.1.1', PUBLIC_V4, '172.15.255.255', '172.32.0.1', '100.63.255.255', '100.128.0.1', '169.253.255.255', '198.17.255.255', '198.20.0.1', '223.255.255.255', '11.0.0.1', '192.167.255.255', '192.169.0.0'])(
    'should allow the public address %s',
    (ip) => {
      expect(forbiddenAddressClass(ip)).toBeNull();
      expect(isForbiddenAddress(ip)).toBe(false);
    },
  );
});

describe('isForbiddenAddress (IPv6)', () => {
  it.each([
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['fc00::1', 'private'],
    ['fd12:3456:789a::1', 'private'],
    ['fe80::1', 'link-local'],
    ['febf:ffff::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['fec0::1', 'private'],
    ['ff02::1', 'multicast'],
    ['ff05::1:3', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['3fff::1', 'documentation'],
    ['2001:2::1', 'benchmarking'],
    ['2001::1', 'reserved'], // Teredo
    ['100::1', 'reserved'],
    ['64:ff9b:1::1', 'private'],
    ['5f00::1', 'reserved'], // outside 2000::/3
    ['4000::1', 'reserved'],
  ])('should refuse %s as %s', (ip, cls) => {
    expect(forbiddenAddressClass(ip)).toBe(cls);
  });

  it.each([
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['0:0:0:0:0:ffff:7f00:1', 'loopback'],
    ['::FFFF:7F00:0001', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:0:127.0.0.1', 'loopback'], // IPv4-translated
    ['::127.0.0.1', 'loopback'], // IPv4-compatible
    ['::7f00:1', 'loopback'],
    ['::8.8.8.8', 'reserved'], // IPv4-compatible is deprecated, refused even when public
    ['64:ff9b::127.0.0.1', 'loopback'], // NAT64
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['2002:7f00:1::1', 'loopback'], // 6to4 of 127.0.0.1
    ['2002:c0a8:101::', 'private'], // 6to4 of 192.168.1.1
    ['2002:a9fe:a9fe::', 'link-local'],
  ])('should refuse %s, which embeds a forbidden IPv4 address, as %s', (ip, cls) => {
    expect(forbiddenAddressClass(ip)).toBe(cls);
  });

  it.each([PUBLIC_V6, '2001:4860:4860::8888', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::8.8.8.8', '64:ff9b::808:808', '2002:808:808::1'])(
    'should allow the public address %s',
    (ip) => {
      expect(isForbiddenAddress(ip)).toBe(false);
    },
  );
});

describe('isForbiddenAddress (not an address)', () => {
  it.each(['', 'localhost', '127.1', '0x7f000001', '2130706433', '1.2.3.4.5', '::g', '[::1]', ' 8.8.8.8'])(
    'should fail closed on %j',
    (text) => {
      expect(forbiddenAddressClass(text)).toBe('invalid');
    },
  );
});

describe('parseIPv6', () => {
  it('should expand compressed and dotted forms to the same value', () => {
    expect(parseIPv6('::ffff:127.0.0.1')).toBe(parseIPv6('0:0:0:0:0:ffff:7f00:1'));
    expect(parseIPv6('1:2:3:4:5:6:1.2.3.4')).toBe(parseIPv6('1:2:3:4:5:6:102:304'));
    expect(parseIPv6('1::')).toBe(1n << 112n);
    expect(parseIPv6('::')).toBe(0n);
  });

  it('should return null for non-IPv6 text', () => {
    expect(parseIPv6('1.2.3.4')).toBeNull();
    expect(parseIPv6('1:2:3:4:5:6:7:8:9')).toBeNull();
  });
});

describe('checkWebhookUrl', () => {
  const publicOpts = { livemode: false, allowPrivate: false, resolve: fixed([PUBLIC_V4]) };

  it('should accept an https URL whose host resolves to public addresses', async () => {
    await expect(checkWebhookUrl('https://hooks.example.com/payorch?x=1', { livemode: false, allowPrivate: false, resolve: fixed([PUBLIC_V4, PUBLIC_V6]) })).resolves.toEqual({ ok: true });
  });

  it('should refuse a URL that is not https', async () => {
    for (const url of ['http://hooks.example.com/', 'ftp://hooks.example.com/', 'wss://hooks.example.com/']) {
      await expect(checkWebhookUrl(url, publicOpts)).resolves.toEqual({ ok: false, reason: 'URL must use https' });
    }
  });

  it('should refuse https-only rules even when private addresses are allowed', async () => {
    await expect(checkWebhookUrl('http://127.0.0.1/', { livemode: false, allowPrivate: true })).resolves.toMatchObject({ ok: false });
    await expect(checkWebhookUrl('https://user:pw@127.0.0.1/', { livemode: false, allowPrivate: true })).resolves.toMatchObject({ ok: false });
  });

  it('should refuse credentials in the URL', async () => {
    await expect(checkWebhookUrl('https://user:secret@hooks.example.com/', publicOpts)).resolves.toEqual({ ok: false, reason: 'URL must not contain credentials' });
    await expect(checkWebhookUrl('https://user@hooks.example.com/', publicOpts)).resolves.toMatchObject({ ok: false });
  });

  it('should refuse an unparsable URL', async () => {
    await expect(checkWebhookUrl('not a url', publicOpts)).resolves.toEqual({ ok: false, reason: 'URL is not valid' });
    await expect(checkWebhookUrl('https://[fe80::1%25eth0]/', publicOpts)).resolves.toMatchObject({ ok: false });
  });

  it.each([
    ['https://127.0.0.1/', 'loopback'],
    ['https://2130706433/', 'loopback'],
    ['https://0x7f000001/', 'loopback'],
    ['https://127.1/', 'loopback'],
    ['https://0177.0.0.1/', 'loopback'],
    ['https://0x7f.1/', 'loopback'],
    ['https://127.0.0.1./', 'loopback'],
    ['https://%31%32%37.0.0.1/', 'loopback'],
    ['https://0/', 'unspecified'],
    ['https://10.1.2.3:8443/hook', 'private'],
    ['https://169.254.169.254/latest/meta-data', 'link-local'],
    ['https://100.64.0.1/', 'shared'],
    ['https://[::1]/', 'loopback'],
    ['https://[::]/', 'unspecified'],
    ['https://[::ffff:127.0.0.1]/', 'loopback'],
    ['https://[::ffff:7f00:1]/', 'loopback'],
    ['https://[::127.0.0.1]/', 'loopback'],
    ['https://[64:ff9b::7f00:1]/', 'loopback'],
    ['https://[2002:7f00:1::1]/', 'loopback'],
    ['https://[fd00::1]/', 'private'],
    ['https://[fe80::1]/', 'link-local'],
    ['https://[ff02::1]/', 'multicast'],
    ['https://224.0.0.1/', 'multicast'],
    ['https://255.255.255.255/', 'broadcast'],
  ])('should refuse the literal host of %s without resolving it', async (url, cls) => {
    const resolve = jest.fn(fixed([PUBLIC_V4]));
    await expect(checkWebhookUrl(url, { livemode: false, allowPrivate: false, resolve })).resolves.toEqual({ ok: false, reason: `URL host is a ${cls} address` });
    expect(resolve).not.toHaveBeenCalled();
  });

  it('should accept a public literal host without resolving it', async () => {
    const resolve = jest.fn(fixed(['127.0.0.1']));
    await expect(checkWebhookUrl(`https://${PUBLIC_V4}/`, { livemode: false, allowPrivate: false, resolve })).resolves.toEqual({ ok: true });
    await expect(checkWebhookUrl(`https://[${PUBLIC_V6}]:8443/`, { livemode: false, allowPrivate: false, resolve })).resolves.toEqual({ ok: true });
    expect(resolve).not.toHaveBeenCalled();
  });

  it('should refuse localhost names without asking DNS', async () => {
    const resolve = jest.fn(fixed([PUBLIC_V4]));
    for (const url of ['https://localhost/', 'https://LOCALHOST:8443/', 'https://localhost./', 'https://api.localhost/']) {
      await expect(checkWebhookUrl(url, { livemode: false, allowPrivate: false, resolve })).resolves.toEqual({ ok: false, reason: 'URL host is a loopback address' });
    }
    expect(resolve).not.toHaveBeenCalled();
  });

  it('should resolve a name and refuse it when it resolves to a forbidden address', async () => {
    await expect(checkWebhookUrl('https://internal.example.com/', { livemode: false, allowPrivate: false, resolve: fixed(['10.0.0.5']) })).resolves.toEqual({
      ok: false,
      reason: 'URL host resolves to a private address',
    });
  });

  it('should refuse a name when any one of its addresses is forbidden', async () => {
    await expect(checkWebhookUrl('https://mixed.example.com/', { livemode: false, allowPrivate: false, resolve: fixed([PUBLIC_V4, PUBLIC_V6, '::1']) })).resolves.toEqual({
      ok: false,
      reason: 'URL host resolves to a loopback address',
    });
    await expect(checkWebhookUrl('https://mixed.example.com/', { livemode: false, allowPrivate: false, resolve: fixed(['::ffff:169.254.169.254', PUBLIC_V4]) })).resolves.toMatchObject({ ok: false });
  });

  it('should refuse a name that cannot be resolved or resolves to nothing', async () => {
    await expect(checkWebhookUrl('https://nowhere.invalid/', { livemode: false, allowPrivate: false, resolve: failing })).resolves.toEqual({ ok: false, reason: 'URL host could not be resolved' });
    await expect(checkWebhookUrl('https://empty.example.com/', { livemode: false, allowPrivate: false, resolve: fixed([]) })).resolves.toEqual({ ok: false, reason: 'URL host could not be resolved' });
  });

  it('should pass the URL hostname to the resolver', async () => {
    const resolve = jest.fn(fixed([PUBLIC_V4]));
    await checkWebhookUrl('https://Hooks.Example.COM:8443/path', { livemode: false, allowPrivate: false, resolve });
    expect(resolve).toHaveBeenCalledWith('hooks.example.com');
  });

  it('should allow private, loopback and link-local destinations when allowPrivate is set', async () => {
    const resolve = jest.fn(fixed(['127.0.0.1']));
    for (const url of ['https://127.0.0.1:8443/', 'https://localhost/', 'https://[::1]/', 'https://169.254.169.254/', 'https://2130706433/', 'https://internal.example.com/']) {
      await expect(checkWebhookUrl(url, { livemode: false, allowPrivate: true, resolve })).resolves.toEqual({ ok: true });
    }
    expect(resolve).not.toHaveBeenCalled();
  });
});

describe('live mode', () => {
  it('should ignore WEBHOOK_ALLOW_PRIVATE: the live policy never allows private addresses', () => {
    expect(destinationPolicy(true, true)).toEqual({ allowPrivate: false, ports: LIVE_WEBHOOK_PORTS });
    expect(destinationPolicy(true, false)).toEqual({ allowPrivate: false, ports: LIVE_WEBHOOK_PORTS });
    expect(destinationPolicy(false, true)).toEqual({ allowPrivate: true, ports: null });
    expect(destinationPolicy(false, false)).toEqual({ allowPrivate: false, ports: null });
  });

  it('should refuse private, loopback and link-local destinations in live mode even when allowPrivate is set', async () => {
    const resolve = jest.fn(fixed(['10.0.0.5']));
    const live = { livemode: true, allowPrivate: true, resolve };
    await expect(checkWebhookUrl('https://127.0.0.1/', live)).resolves.toEqual({ ok: false, reason: 'URL host is a loopback address' });
    await expect(checkWebhookUrl('https://localhost:8443/', live)).resolves.toEqual({ ok: false, reason: 'URL host is a loopback address' });
    await expect(checkWebhookUrl('https://[fe80::1]/', live)).resolves.toEqual({ ok: false, reason: 'URL host is a link-local address' });
    await expect(checkWebhookUrl('https://169.254.169.254/latest/meta-data', live)).resolves.toEqual({ ok: false, reason: 'URL host is a link-local address' });
    // A name is resolved and judged, as if WEBHOOK_ALLOW_PRIVATE were off.
    await expect(checkWebhookUrl('https://internal.example.com/', live)).resolves.toEqual({ ok: false, reason: 'URL host resolves to a private address' });
    expect(resolve).toHaveBeenCalledWith('internal.example.com');
  });

  it('should allow only ports 443 and 8443 in live mode', async () => {
    const live = { livemode: true, allowPrivate: false, resolve: fixed([PUBLIC_V4]) };
    for (const url of ['https://hooks.example.com/', 'https://hooks.example.com:443/', 'https://hooks.example.com:8443/h', `https://[${PUBLIC_V6}]:8443/`]) {
      await expect(checkWebhookUrl(url, live)).resolves.toEqual({ ok: true });
    }
    for (const url of ['https://hooks.example.com:8080/', 'https://hooks.example.com:80/', 'https://hooks.example.com:1/', `https://${PUBLIC_V4}:9443/`]) {
      await expect(checkWebhookUrl(url, live)).resolves.toEqual({ ok: false, reason: 'URL port must be 443 or 8443 in live mode' });
    }
    await expect(checkWebhookUrl('https://hooks.example.com:8080/', { ...live, allowPrivate: true })).resolves.toMatchObject({ ok: false });
  });

  it('should allow any port in test mode', async () => {
    await expect(checkWebhookUrl('https://hooks.example.com:8080/', { livemode: false, allowPrivate: false, resolve: fixed([PUBLIC_V4]) })).resolves.toEqual({ ok: true });
    await expect(checkWebhookUrl('https://127.0.0.1:49152/', { livemode: false, allowPrivate: true })).resolves.toEqual({ ok: true });
  });
});

describe('safeLookup', () => {
  it('should pass a public answer through in single-address form', async () => {
    const lookup = safeLookup(false, lookupReturning([{ address: PUBLIC_V4, family: 4 }]));
    await expect(runLookup(lookup, 'hooks.example.com', {})).resolves.toEqual({ err: null, address: PUBLIC_V4, family: 4 });
  });

  it('should pass every public address through when called with all: true', async () => {
    const answer = [{ address: PUBLIC_V6, family: 6 }, { address: PUBLIC_V4, family: 4 }];
    const lookup = safeLookup(false, lookupReturning(answer));
    const result = await runLookup(lookup, 'hooks.example.com', { all: true });
    expect(result.err).toBeNull();
    expect(result.address).toEqual(answer);
  });

  it('should fail with EFORBIDDENADDRESS when the address returned is forbidden', async () => {
    const lookup = safeLookup(false, lookupReturning([{ address: '127.0.0.1', family: 4 }]));
    const result = await runLookup(lookup, 'rebind.example.com', {});
    expect(result.err?.code).toBe(FORBIDDEN_ADDRESS_CODE);
    expect(result.err?.message).toContain('loopback');
  });

  it('should fail when any address of an all: true answer is forbidden', async () => {
    const lookup = safeLookup(false, lookupReturning([{ address: PUBLIC_V4, family: 4 }, { address: '::ffff:10.0.0.1', family: 6 }]));
    const result = await runLookup(lookup, 'mixed.example.com', { all: true });
    expect(result.err?.code).toBe(FORBIDDEN_ADDRESS_CODE);
  });

  it('should check every address even when only one was asked for', async () => {
    const lookup = safeLookup(false, lookupReturning([{ address: PUBLIC_V4, family: 4 }, { address: '169.254.169.254', family: 4 }]));
    const result = await runLookup(lookup, 'mixed.example.com', {});
    expect(result.err?.code).toBe(FORBIDDEN_ADDRESS_CODE);
  });

  it('should accept a base lookup that answers in single-address form', async () => {
    const base = ((_h: string, _o: LookupOptions, cb: (e: null, a: string, f: number) => void) => cb(null, '::1', 6)) as unknown as LookupFunction;
    const refused = await runLookup(safeLookup(false, base), 'x.example.com', { all: true });
    expect(refused.err?.code).toBe(FORBIDDEN_ADDRESS_CODE);
    const allowed = await runLookup(safeLookup(true, base), 'x.example.com', { all: true });
    expect(allowed).toEqual({ err: null, address: [{ address: '::1', family: 6 }], family: undefined });
  });

  it('should pass resolution errors through', async () => {
    const base = ((_h: string, _o: LookupOptions, cb: (e: NodeJS.ErrnoException) => void) =>
      cb(Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }))) as unknown as LookupFunction;
    const result = await runLookup(safeLookup(false, base), 'nowhere.invalid', {});
    expect(result.err?.code).toBe('ENOTFOUND');
  });

  it('should allow forbidden addresses when allowPrivate is set', async () => {
    const lookup = safeLookup(true, lookupReturning([{ address: '127.0.0.1', family: 4 }]));
    await expect(runLookup(lookup, 'localhost', {})).resolves.toEqual({ err: null, address: '127.0.0.1', family: 4 });
  });

  it('should defeat DNS rebinding: public when the URL is checked, loopback at connect time', async () => {
    const rebinding = lookupReturning([{ address: PUBLIC_V4, family: 4 }], [{ address: '127.0.0.1', family: 4 }]);
    const resolve = (host: string) =>
      runLookup(rebinding, host, { all: true }).then(({ address }) => (address as LookupAddress[]).map((a) => a.address));

    await expect(checkWebhookUrl('https://rebind.example.com/', { livemode: false, allowPrivate: false, resolve })).resolves.toEqual({ ok: true });
    const atConnect = await runLookup(safeLookup(false, rebinding), 'rebind.example.com', { all: true });
    expect(rebinding.calls).toBe(2);
    expect(atConnect.err?.code).toBe(FORBIDDEN_ADDRESS_CODE);
  });
});
