import { startTestApp, type TestApp, type TestAccount } from '../helpers/app';

/*
 * The parties an invoice names (API.md §3, §7): the account's address, taxId and supportEmail,
 * the customer's address and taxIds, over REST.
 */

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

const berlin = { line1: 'Friedrichstraße 68', postalCode: '10117', city: 'Berlin', country: 'de' };
const berlinOut = { line1: 'Friedrichstraße 68', line2: null, postalCode: '10117', city: 'Berlin', state: null, country: 'DE' };

describe('account address, taxId and supportEmail', () => {
  let account: TestAccount;
  beforeAll(async () => {
    account = await app.createAccount();
  });
  const patch = (body: unknown, key = account.testKey) => app.request('PATCH', '/v1/account', { key, body });

  it('should read none at first, set them, keep what a later PATCH leaves out, and clear each with null', async () => {
    const first = await app.request('GET', '/v1/account', { key: account.testKey });
    expect(first.body.data).toMatchObject({ object: 'account', address: null, taxId: null, supportEmail: null });

    const set = await patch({ address: berlin, taxId: ' DE123456789 ', supportEmail: 'billing@acme.example' });
    expect(set.status).toBe(200);
    expect(set.body.data).toMatchObject({ address: berlinOut, taxId: 'DE123456789', supportEmail: 'billing@acme.example' });
    // Both modes read the account's one setting.
    const live = await app.request('GET', '/v1/account', { key: account.liveKey });
    expect(live.body.data).toMatchObject({ livemode: true, address: berlinOut, taxId: 'DE123456789', supportEmail: 'billing@acme.example' });

    const renamed = await patch({ name: 'Acme Tools GmbH', address: { ...berlin, line2: 'Aufgang B', state: 'Berlin', postalCode: '10117' } });
    expect(renamed.body.data).toMatchObject({
      name: 'Acme Tools GmbH', address: { ...berlinOut, line2: 'Aufgang B', state: 'Berlin' }, taxId: 'DE123456789', supportEmail: 'billing@acme.example',
    });

    const cleared = await patch({ address: null, taxId: null });
    expect(cleared.body.data).toMatchObject({ address: null, taxId: null, supportEmail: 'billing@acme.example' });
    const noMail = await patch({ supportEmail: null });
    expect(noMail.body.data).toMatchObject({ address: null, taxId: null, supportEmail: null });
    expect((await app.request('GET', '/v1/account', { key: account.testKey })).body.data).toEqual(noMail.body.data);
  });

  it('should refuse a bad address, tax id or e-mail with 400, its code and param, and change nothing', async () => {
    await patch({ address: berlin, taxId: 'DE123456789' });
    const before = (await app.request('GET', '/v1/account', { key: account.testKey })).body.data;
    const cases: Array<[unknown, string, string]> = [
      [{ address: { ...berlin, country: 'XX' } }, 'invalid_parameter', 'address.country'],
      [{ address: { ...berlin, country: 'Germany' } }, 'invalid_parameter', 'address.country'],
      [{ address: { line1: 'Friedrichstraße 68', postalCode: '10117', country: 'DE' } }, 'missing_parameter', 'address.city'],
      [{ address: { ...berlin, line1: '  ' } }, 'invalid_parameter', 'address.line1'],
      [{ address: { ...berlin, line1: 'Line one\nLine two' } }, 'invalid_parameter', 'address.line1'],
      [{ address: { ...berlin, postalCode: '10117!' } }, 'invalid_parameter', 'address.postalCode'],
      [{ address: { ...berlin, street: 'x' } }, 'unknown_parameter', 'address.street'],
      [{ address: 'Friedrichstraße 68, Berlin' }, 'invalid_parameter', 'address'],
      [{ taxId: '' }, 'invalid_parameter', 'taxId'],
      [{ taxId: 'x'.repeat(65) }, 'invalid_parameter', 'taxId'],
      [{ supportEmail: 'not an address' }, 'invalid_parameter', 'supportEmail'],
    ];
    for (const [body, code, param] of cases) {
      const res = await patch(body);
      expect([param, res.status, res.body.error?.code, res.body.error?.param]).toEqual([param, 400, code, param]);
    }
    expect((await app.request('GET', '/v1/account', { key: account.testKey })).body.data).toEqual(before);
  });

  it('should need account:write to change them', async () => {
    const reader = await app.request('POST', '/v1/api-keys', { key: account.testKey, body: { permissions: ['account:read'] } });
    const key = reader.body.data.secret as string;
    expect((await app.request('GET', '/v1/account', { key })).status).toBe(200);
    const refused = await patch({ taxId: 'DE999999999' }, key);
    expect([refused.status, refused.body.error.code]).toEqual([403, 'permission_denied']);
  });
});

describe('customer address and taxIds', () => {
  const key = () => app.account.testKey;
  const post = (body: unknown) => app.request('POST', '/v1/customers', { key: key(), body });
  const patch = (id: string, body: unknown) => app.request('PATCH', `/v1/customers/${id}`, { key: key(), body });

  it('should create with them, normalised, read them back, replace each on PATCH and clear each with null', async () => {
    const created = await post({
      email: 'marie@example.fr', name: 'Marie Curie', locale: 'fr',
      address: { line1: '11 rue Pierre et Marie Curie', postalCode: '75005', city: 'Paris', country: 'fr' },
      taxIds: [{ type: 'eu_vat', value: 'fr 12 345678901' }, { type: 'gb_vat', value: 'GB123456789' }],
    });
    expect(created.status).toBe(201);
    const address = { line1: '11 rue Pierre et Marie Curie', line2: null, postalCode: '75005', city: 'Paris', state: null, country: 'FR' };
    expect(created.body.data).toMatchObject({ address, taxIds: [{ type: 'eu_vat', value: 'FR12345678901' }, { type: 'gb_vat', value: 'GB123456789' }] });
    const id = created.body.data.id as string;
    expect((await app.request('GET', `/v1/customers/${id}`, { key: key() })).body.data).toEqual(created.body.data);
    // The event carries the object as the API returns it.
    const events = (await app.request('GET', `/v1/events?type=customer.created&pageSize=100`, { key: key() })).body.data;
    expect(events.find((e: { data: { object: { id: string } } }) => e.data.object.id === id).data.object).toMatchObject({ address, taxIds: created.body.data.taxIds });

    const moved = await patch(id, { address: { line1: '1 Place du Panthéon', line2: 'Bâtiment A', postalCode: '75005', city: 'Paris', country: 'FR' } });
    expect(moved.status).toBe(200);
    expect(moved.body.data).toMatchObject({ address: { line1: '1 Place du Panthéon', line2: 'Bâtiment A' }, taxIds: created.body.data.taxIds });
    const retyped = await patch(id, { taxIds: [{ type: 'ch_vat', value: 'CHE-123.456.789 MWST' }] });
    expect(retyped.body.data).toMatchObject({ address: moved.body.data.address, taxIds: [{ type: 'ch_vat', value: 'CHE-123.456.789MWST' }] });

    const cleared = await patch(id, { address: null, taxIds: null });
    expect(cleared.body.data).toMatchObject({ address: null, taxIds: [], name: 'Marie Curie', locale: 'fr' });
    const updated = (await app.request('GET', `/v1/events?type=customer.updated&pageSize=1`, { key: key() })).body.data[0];
    expect(updated.data.object).toMatchObject({ id, address: null, taxIds: [] });
    await patch(id, { taxIds: [{ type: 'us_ein', value: '12-3456789' }] });
    expect((await patch(id, { taxIds: [] })).body.data.taxIds).toEqual([]);
  });

  it('should read none on a customer made without them, in lists too', async () => {
    const created = await post({ email: 'plain@example.com' });
    expect(created.body.data).toMatchObject({ address: null, taxIds: [] });
    const listed = await app.request('GET', '/v1/customers?search=plain@example.com', { key: key() });
    expect(listed.body.data[0]).toMatchObject({ id: created.body.data.id, address: null, taxIds: [] });
  });

  it('should refuse bad tax ids and addresses with 400, its code and param, creating or changing nothing', async () => {
    const customer = (await post({ email: 'checked@example.com', taxIds: [{ type: 'eu_vat', value: 'DE123456789' }] })).body.data;
    const london = { line1: '10 Downing Street', postalCode: 'SW1A 2AA', city: 'London', country: 'GB' };
    const eu = (value: string) => ({ type: 'eu_vat', value });
    const cases: Array<[unknown, string, string]> = [
      [{ taxIds: [{ type: 'xx_vat', value: 'DE123456789' }] }, 'invalid_parameter', 'taxIds[0].type'],
      [{ taxIds: [eu('DE123456789'), { type: 'gb_vat', value: 'GB123' }] }, 'invalid_parameter', 'taxIds[1].value'],
      [{ taxIds: [eu('US123456789')] }, 'invalid_parameter', 'taxIds[0].value'],
      [{ taxIds: [{ type: 'eu_vat' }] }, 'missing_parameter', 'taxIds[0].value'],
      [{ taxIds: [{ type: 'eu_vat', value: '   ' }] }, 'invalid_parameter', 'taxIds[0].value'],
      [{ taxIds: [{ ...eu('DE123456789'), country: 'DE' }] }, 'unknown_parameter', 'taxIds[0].country'],
      [{ taxIds: [eu('DE123456789'), eu('de 123456789')] }, 'invalid_parameter', 'taxIds[1]'],
      [{ taxIds: ['DE1', 'DE2', 'DE3', 'DE4', 'DE5', 'DE6'].map((p) => eu(`${p}1234567`)) }, 'invalid_parameter', 'taxIds'],
      [{ taxIds: 'DE123456789' }, 'invalid_parameter', 'taxIds'],
      [{ address: { ...london, country: 'UK' } }, 'invalid_parameter', 'address.country'],
      [{ address: { ...london, postalCode: undefined } }, 'missing_parameter', 'address.postalCode'],
      [{ address: { ...london, line2: 7 } }, 'invalid_parameter', 'address.line2'],
    ];
    for (const [body, code, param] of cases) {
      const created = await post({ email: 'refused@example.com', ...(body as object) });
      expect([param, created.status, created.body.error?.code, created.body.error?.param]).toEqual([param, 400, code, param]);
      const changed = await patch(customer.id, body);
      expect([param, changed.status, changed.body.error?.code, changed.body.error?.param]).toEqual([param, 400, code, param]);
    }
    expect((await app.request('GET', '/v1/customers?email=refused@example.com', { key: key() })).body.data).toEqual([]);
    expect((await app.request('GET', `/v1/customers/${customer.id}`, { key: key() })).body.data).toEqual(customer);
  });

  it('should take a country without postal codes (empty postalCode) and every listed tax id type in its form', async () => {
    const created = await post({
      email: 'hk@example.com', address: { line1: '1 Queen\'s Road Central', postalCode: '', city: 'Hong Kong', country: 'HK' },
      taxIds: [{ type: 'us_ein', value: '12-3456789' }, { type: 'au_abn', value: '51 824 753 556' }, { type: 'in_gst', value: '27AAPFU0939F1ZV' }, { type: 'no_vat', value: '123456789MVA' }, { type: 'jp_cn', value: '1234567890123' }],
    });
    expect(created.status).toBe(201);
    expect(created.body.data.address).toMatchObject({ postalCode: '', country: 'HK' });
    expect(created.body.data.taxIds.map((t: { value: string }) => t.value)).toEqual(['12-3456789', '51824753556', '27AAPFU0939F1ZV', '123456789MVA', '1234567890123']);
  });
});
