import type { QueryInterface } from 'sequelize';

/**
 * The recovery scans only ever look for pending rows, so their indexes hold only those: a
 * payment or refund that settles leaves the index instead of adding a new entry to it (one
 * index write less on every settlement, and an index the size of the work in flight).
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  for (const table of ['payments', 'refunds']) {
    await qi.removeIndex(table, `${table}_pending_idx`);
    await qi.addIndex(table, ['lease_until'], { name: `${table}_pending_idx`, where: { status: 'pending' } });
  }
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  for (const table of ['payments', 'refunds']) {
    await qi.removeIndex(table, `${table}_pending_idx`);
    await qi.addIndex(table, ['status', 'lease_until'], { name: `${table}_pending_idx` });
  }
}
