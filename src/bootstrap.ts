import type { Services } from './services';

/** The name of the account made on the first start when ACCOUNT_NAME does not give one. */
export const DEFAULT_ACCOUNT_NAME = 'Default account';

/**
 * First start on an empty database: a default account whose keys are shown exactly once, named
 * `name` (ACCOUNT_NAME) when given: the merchant's name on invoices, mails and payment pages.
 */
export async function ensureDefaultAccount(services: Services, name?: string): Promise<{ accountId: string; testKey: string; liveKey: string; name: string } | null> {
  if ((await services.accounts.countAccounts()) > 0) return null;
  const accountName = name ?? DEFAULT_ACCOUNT_NAME;
  const created = await services.accounts.createAccount({ name: accountName });
  return { accountId: created.accountId, testKey: created.testKey.secret as string, liveKey: created.liveKey.secret as string, name: accountName };
}

/**
 * The one command that names the default account, printed beside its keys when ACCOUNT_NAME did
 * not: until then invoices, mails and payment pages say "Default account".
 */
export function nameCommand(baseUrl: string, testKey: string): string {
  return `curl -sk -X PATCH ${baseUrl}/v1/account -H "Authorization: Bearer ${testKey}" -H 'Content-Type: application/json' -d '{"name":"Your business name"}'`;
}
