import { startTestApp, type TestApp } from '../helpers/app';

/* The parties an invoice names (API.md §3, §7) over GraphQL: the same service and checks as REST. */

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

const gql = (query: string, variables: Record<string, unknown> = {}, key = app.account.testKey) =>
  app.request('POST', '/graphql', { key, body: { query, variables } });

const ADDRESS = 'address { line1 line2 postalCode city state country }';

describe('GraphQL parties', () => {
  it('should set, read and clear the account address, taxId and supportEmail', async () => {
    const { testKey } = await app.createAccount();
    const update = `mutation($input: UpdateAccountInput!) { updateAccount(input: $input) { ${ADDRESS} taxId supportEmail } }`;
    const set = await gql(update, {
      input: { address: { line1: '350 Fifth Avenue', postalCode: '10118', city: 'New York', state: 'NY', country: 'us' }, taxId: '12-3456789', supportEmail: 'help@acme.example' },
    }, testKey);
    expect(set.body.errors).toBeUndefined();
    const expected = {
      address: { line1: '350 Fifth Avenue', line2: null, postalCode: '10118', city: 'New York', state: 'NY', country: 'US' }, taxId: '12-3456789', supportEmail: 'help@acme.example',
    };
    expect(set.body.data.updateAccount).toEqual(expected);
    const read = await gql(`{ account { ${ADDRESS} taxId supportEmail } }`, {}, testKey);
    expect(read.body.data.account).toEqual(expected);
    expect((await app.request('GET', '/v1/account', { key: testKey })).body.data).toMatchObject(expected);

    const kept = await gql(update, { input: { supportEmail: null } }, testKey);
    expect(kept.body.data.updateAccount).toEqual({ ...expected, supportEmail: null });
    const cleared = await gql(`mutation { updateAccount(input: { address: null, taxId: null }) { ${ADDRESS} taxId supportEmail } }`, {}, testKey);
    expect(cleared.body.data.updateAccount).toEqual({ address: null, taxId: null, supportEmail: null });

    const bad = await gql(update, { input: { address: { ...expected.address, country: 'USA' } } }, testKey);
    expect(bad.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'address.country' });
    const badMail = await gql(update, { input: { supportEmail: 'nope' } }, testKey);
    expect(badMail.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'supportEmail' });
  });

  it('should create a customer with address and taxIds, update each, clear them with null, and read them', async () => {
    const fields = `id ${ADDRESS} taxIds { type value }`;
    const created = await gql(`mutation($input: CreateCustomerInput!) { createCustomer(input: $input) { ${fields} } }`, {
      input: {
        email: 'hans@example.de', name: 'Hans Müller', locale: 'de',
        address: { line1: 'Hauptstraße 5', postalCode: '80331', city: 'München', country: 'DE' },
        taxIds: [{ type: 'eu_vat', value: 'DE 123 456 789' }],
      },
    });
    expect(created.body.errors).toBeUndefined();
    const c = created.body.data.createCustomer;
    expect(c).toMatchObject({
      address: { line1: 'Hauptstraße 5', line2: null, postalCode: '80331', city: 'München', state: null, country: 'DE' },
      taxIds: [{ type: 'eu_vat', value: 'DE123456789' }],
    });
    const rest = (await app.request('GET', `/v1/customers/${c.id}`, { key: app.account.testKey })).body.data;
    expect({ address: rest.address, taxIds: rest.taxIds }).toEqual({ address: c.address, taxIds: c.taxIds });

    const update = `mutation($id: ID!, $input: UpdateCustomerInput!) { updateCustomer(id: $id, input: $input) { ${fields} } }`;
    const retaxed = await gql(update, { id: c.id, input: { taxIds: [{ type: 'eu_vat', value: 'DE123456789' }, { type: 'gb_vat', value: 'GB123456789' }] } });
    expect(retaxed.body.data.updateCustomer).toMatchObject({ address: c.address, taxIds: [{ type: 'eu_vat' }, { type: 'gb_vat', value: 'GB123456789' }] });
    const read = await gql(`query($id: ID!) { customer(id: $id) { ${fields} } }`, { id: c.id });
    expect(read.body.data.customer).toEqual(retaxed.body.data.updateCustomer);

    const cleared = await gql(`mutation($id: ID!) { updateCustomer(id: $id, input: { address: null, taxIds: null }) { ${fields} } }`, { id: c.id });
    expect(cleared.body.data.updateCustomer).toEqual({ id: c.id, address: null, taxIds: [] });
  });

  it('should refuse bad parties with the REST codes and params', async () => {
    const create = 'mutation($input: CreateCustomerInput!) { createCustomer(input: $input) { id } }';
    const err = async (input: Record<string, unknown>) => {
      const res = await gql(create, { input: { email: 'bad-parties@example.com', ...input } });
      expect(res.body.errors).toHaveLength(1);
      return res.body.errors[0].extensions as { code: string; param?: string };
    };
    expect(await err({ taxIds: [{ type: 'eu_vat', value: 'GB123456789' }] })).toMatchObject({ code: 'invalid_parameter', param: 'taxIds[0].value' });
    // A type outside the list is refused by the enum, as REST refuses it.
    expect(await err({ taxIds: [{ type: 'xx_vat', value: 'DE123456789' }] })).toMatchObject({ code: 'invalid_parameter', param: 'taxIds[0].type' });
    expect(await err({ address: { line1: 'x', postalCode: '1', city: 'y', country: 'ZZ' } })).toMatchObject({ code: 'invalid_parameter', param: 'address.country' });
    expect(await err({ address: { line1: 'x', postalCode: '1', country: 'DE' } })).toMatchObject({ code: 'missing_parameter', param: 'address.city' });
    expect((await app.request('GET', '/v1/customers?email=bad-parties@example.com', { key: app.account.testKey })).body.data).toEqual([]);
  });
});
