import { Column, DataType, Model, Table } from 'sequelize-typescript';
import type { SubscriptionStatus } from './subscription-states';

@Table({ tableName: 'subscriptions' })
export class SubscriptionModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  @Column({ type: DataType.STRING(64), allowNull: false }) declare customerId: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare priceId: string;
  @Column({ type: DataType.INTEGER, allowNull: false }) declare quantity: number;
  @Column({ type: DataType.STRING(10), allowNull: false }) declare status: SubscriptionStatus;
  @Column({ type: DataType.STRING(24), allowNull: false }) declare collectionMethod: 'charge_automatically' | 'send_invoice';
  @Column({ type: DataType.DATE(3), allowNull: false }) declare currentPeriodStart: Date;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare currentPeriodEnd: Date;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare billingCycleAnchor: Date;
  @Column({ type: DataType.BOOLEAN, allowNull: false, defaultValue: false }) declare cancelAtPeriodEnd: boolean;
  @Column(DataType.DATE(3)) declare canceledAt: Date | null;
  @Column(DataType.DATE(3)) declare pausedAt: Date | null;
  @Column(DataType.DATE(3)) declare endedAt: Date | null;
  @Column(DataType.STRING(64)) declare latestInvoiceId: string | null;
  @Column(DataType.STRING(64)) declare defaultPaymentMethodId: string | null;
  @Column(DataType.STRING(64)) declare testClockId: string | null;
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '{}' }) declare metadata: string;
  @Column(DataType.DATE(3)) declare nextBillingAt: Date | null;
  @Column(DataType.STRING(64)) declare collectInvoiceId: string | null;
  @Column({ type: DataType.INTEGER, allowNull: false, defaultValue: 0 }) declare invoiceAttemptsSeen: number;
  @Column({ type: DataType.INTEGER, allowNull: false, defaultValue: 0 }) declare dunningFailures: number;
  @Column(DataType.DATE(3)) declare firstFailedAt: Date | null;
  @Column(DataType.DATE(3)) declare lastChangeAt: Date | null;
  /** JSON: the tax rate ids its invoices' lines take (migration 0024). */
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '[]' }) declare defaultTaxRateIds: string;
  @Column(DataType.DATE(3)) declare billingLockedUntil: Date | null;
  @Column(DataType.STRING(32)) declare billingLockToken: string | null;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare updatedAt: Date;
}

@Table({ tableName: 'subscription_pending_lines', updatedAt: false })
export class SubscriptionPendingLineModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  @Column({ type: DataType.STRING(64), allowNull: false }) declare subscriptionId: string;
  @Column({ type: DataType.STRING(500), allowNull: false }) declare description: string;
  @Column({ type: DataType.INTEGER, allowNull: false }) declare quantity: number;
  @Column({ type: DataType.BIGINT, allowNull: false }) declare unitAmount: number;
  @Column({ type: DataType.BIGINT, allowNull: false }) declare amount: number;
  @Column(DataType.DATE(3)) declare periodStart: Date | null;
  @Column(DataType.DATE(3)) declare periodEnd: Date | null;
  @Column({ type: DataType.BOOLEAN, allowNull: false, defaultValue: true }) declare proration: boolean;
  @Column(DataType.STRING(64)) declare invoiceId: string | null;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;
}

@Table({ tableName: 'test_clocks' })
export class TestClockModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  @Column(DataType.STRING(200)) declare name: string | null;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare frozenTime: Date;
  @Column({ type: DataType.STRING(10), allowNull: false }) declare status: 'ready' | 'advancing';
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare updatedAt: Date;
}
