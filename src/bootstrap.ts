import type { Services } from './services';

/** First start on an empty database: a default account whose keys are shown exactly once. */
export async function ensureDefaultAccount(services: Services): Promise<{ accountId: string; testKey: string; liveKey: string } | null> {
  if ((await services.accounts.countAccounts()) > 0) return null;
  const created = await services.accounts.createAccount({ name: 'Default account' });
  return { accountId: created.accountId, testKey: created.testKey.secret as string, liveKey: created.liveKey.secret as string };
}
