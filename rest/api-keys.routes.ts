import { createKeyInput, listKeysInput } from '../src/modules/accounts/account.inputs';
import { apiKeySchema } from '../src/modules/accounts/account.schemas';
import { apiKeyExample } from './response-examples';
import { route } from './route-table';

export const apiKeyRoutes = [
  route.one({
    method: 'POST', path: '/api-keys', operationId: 'createApiKey', tag: 'API keys', summary: 'Create an API key (its secret is shown once)',
    description: 'The new key may hold only permissions the calling key holds itself (`*` only from a `*` key); any other is refused with `403 permission_denied`, `param` naming it.',
    permission: 'api_keys:write', idempotent: 'createApiKey', body: createKeyInput, response: apiKeySchema, errors: ['limit_exceeded'],
    example: { name: 'Dashboard (read only)', permissions: ['payments:read', 'customers:read'] },
    responseExample: { ...apiKeyExample, secret: 'sk_test_ExampleKeyNotReal0000000000000000000000Q7xP' },
    handle: (s, r) => s.accounts.createKey(r.rc, r.body, r.idem),
  }),
  route.list({
    method: 'GET', path: '/api-keys', operationId: 'listApiKeys', tag: 'API keys', summary: "List the mode's API keys",
    permission: 'api_keys:read', query: listKeysInput, response: apiKeySchema, errors: [],
    handle: (s, r) => s.accounts.listKeys(r.rc, r.query),
  }),
  route.one({
    method: 'DELETE', path: '/api-keys/{id}', operationId: 'revokeApiKey', tag: 'API keys', summary: 'Revoke an API key',
    description: 'Only a key whose permissions are within the calling key\'s own (the calling key itself included); a key holding more is refused with `403 permission_denied` and stays active.',
    permission: 'api_keys:write', response: apiKeySchema, errors: [],
    handle: (s, r) => s.accounts.revokeKey(r.rc, r.param('id')),
  }),
];
