import { BelongsTo, Column, DataType, Model, Table } from 'sequelize-typescript';
import { CustomerModel } from './customer.model';

/**
 * The credit a customer holds in one currency, in minor units, never below 0 (migration 0021).
 * Written only by CustomerCreditStore, in the transaction of the balance transaction that
 * changes it.
 */
@Table({ tableName: 'customer_balances', createdAt: false })
export class CustomerBalanceModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare customerId: string;
  @Column({ type: DataType.STRING(3), primaryKey: true }) declare currency: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  @Column({ type: DataType.BIGINT, allowNull: false }) declare amount: number;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare updatedAt: Date;

  @BelongsTo(() => CustomerModel, { foreignKey: 'customerId', constraints: false }) declare customer?: CustomerModel;
}

/** One change of a customer's credit balance (`amount` positive adds credit); never changed or deleted. */
@Table({ tableName: 'customer_balance_transactions', updatedAt: false })
export class CustomerBalanceTransactionModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  @Column({ type: DataType.STRING(64), allowNull: false }) declare customerId: string;
  @Column({ type: DataType.STRING(3), allowNull: false }) declare currency: string;
  @Column({ type: DataType.BIGINT, allowNull: false }) declare amount: number;
  @Column({ type: DataType.STRING(24), allowNull: false }) declare type: 'invoice_credit' | 'applied_to_invoice' | 'adjustment';
  @Column(DataType.STRING(64)) declare invoiceId: string | null;
  @Column(DataType.STRING(500)) declare description: string | null;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;

  @BelongsTo(() => CustomerModel, { foreignKey: 'customerId', constraints: false }) declare customer?: CustomerModel;
}
