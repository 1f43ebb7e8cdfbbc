import type { QueryInterface } from 'sequelize';

/**
 * Earlier versions stored each Idempotency-Key's request as a plain SHA-256 of the body, which
 * for a card payment held the card number and CVC: guessable back from the hash. The hashes are
 * now keyed and leave the CVC out; the old ones are dropped. A row marked `legacy` matches any
 * request, so a retry within the keys' lifetime is still answered from its stored response.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.sequelize.query("UPDATE idempotency_keys SET request_hash = 'legacy'");
}

export async function down(): Promise<void> {
  // The plain hashes are gone for good.
}
