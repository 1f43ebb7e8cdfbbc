import { updateAccountInput } from '../src/modules/accounts/account.inputs';
import { accountSettingsSchema } from '../src/modules/accounts/account.schemas';
import { route } from './route-table';

export const accountRoutes = [
  route.one({
    method: 'GET', path: '/account', operationId: 'retrieveAccount', tag: 'Account', summary: "The account's settings",
    permission: 'account:read', response: accountSettingsSchema, errors: [],
    handle: (s, r) => s.accounts.settings(r.rc),
  }),
  route.one({
    method: 'PATCH', path: '/account', operationId: 'updateAccount', tag: 'Account', summary: "Change the account's settings",
    permission: 'account:write', body: updateAccountInput, response: accountSettingsSchema, errors: [],
    example: { invoicePrefix: 'ACME', dunningRetryDays: [1, 3, 7], taxId: 'DE123456789', address: { line1: 'Friedrichstraße 68', postalCode: '10117', city: 'Berlin', country: 'DE' } },
    handle: (s, r) => s.accounts.updateSettings(r.rc, r.body),
  }),
];
