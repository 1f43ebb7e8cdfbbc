import { Column, DataType, Model, Table } from 'sequelize-typescript';

@Table({ tableName: 'checkout_sessions' })
export class CheckoutSessionModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  @Column({ type: DataType.STRING(12), allowNull: false }) declare checkoutMode: 'payment' | 'setup' | 'subscription';
  @Column({ type: DataType.STRING(10), allowNull: false }) declare status: 'open' | 'complete' | 'expired';
  @Column(DataType.BIGINT) declare amount: number | null;
  @Column(DataType.STRING(3)) declare currency: string | null;
  @Column(DataType.STRING(64)) declare priceId: string | null;
  @Column(DataType.STRING(500)) declare description: string | null;
  @Column(DataType.STRING(64)) declare customerId: string | null;
  @Column(DataType.STRING(320)) declare customerEmail: string | null;
  @Column(DataType.STRING(2048)) declare successUrl: string | null;
  @Column(DataType.STRING(2048)) declare cancelUrl: string | null;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare expiresAt: Date;
  @Column(DataType.STRING(64)) declare paymentId: string | null;
  @Column(DataType.STRING(64)) declare paymentMethodId: string | null;
  @Column(DataType.STRING(64)) declare subscriptionId: string | null;
  @Column(DataType.STRING(64)) declare invoiceId: string | null;
  @Column(DataType.DATE(3)) declare payingUntil: Date | null;
  @Column(DataType.STRING(32)) declare payingToken: string | null;
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '{}' }) declare metadata: string;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare updatedAt: Date;
  @Column(DataType.DATE(3)) declare completedAt: Date | null;
  @Column(DataType.DATE(3)) declare expiredAt: Date | null;
  /** Passed to the payments it makes (`automatic` | `manual`). */
  @Column({ type: DataType.STRING(9), allowNull: false, defaultValue: 'automatic' }) declare captureMethod: 'automatic' | 'manual';
}
