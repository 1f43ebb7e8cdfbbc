import { BelongsTo, Column, DataType, Model, Table } from 'sequelize-typescript';
import { AccountModel } from '../accounts/account.model';

/**
 * How many payments an account and mode has in a status, as of the last fold (migration 0019):
 * written by the payments table's triggers (SQLite) and by PaymentCountStore.fold (PostgreSQL),
 * never by the application's own writes.
 */
@Table({ tableName: 'payment_counts' })
export class PaymentCountModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare accountId: string;
  @Column({ type: DataType.STRING(4), primaryKey: true }) declare mode: 'test' | 'live';
  @Column({ type: DataType.STRING(20), primaryKey: true }) declare status: string;
  @Column({ type: DataType.BIGINT, allowNull: false }) declare n: number;

  @BelongsTo(() => AccountModel, { foreignKey: 'accountId', constraints: false }) declare account?: AccountModel;
}

/**
 * `n` payments of an account and mode written by one statement (`oldStatus` null), moved from one
 * status to another, or deleted (`newStatus` null), appended by the payments table's triggers on
 * PostgreSQL and not yet folded into payment_counts.
 */
@Table({ tableName: 'payment_count_deltas' })
export class PaymentCountDeltaModel extends Model {
  @Column({ type: DataType.STRING(36), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  @Column(DataType.STRING(20)) declare oldStatus: string | null;
  @Column(DataType.STRING(20)) declare newStatus: string | null;
  /** How many payments made this move in one statement. */
  @Column({ type: DataType.BIGINT, allowNull: false }) declare n: number;

  @BelongsTo(() => AccountModel, { foreignKey: 'accountId', constraints: false }) declare account?: AccountModel;
}
