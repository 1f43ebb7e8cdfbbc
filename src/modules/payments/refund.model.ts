import { BelongsTo, Column, DataType, Model, Table } from 'sequelize-typescript';
import { AccountModel } from '../accounts/account.model';
import { GatewayModel } from '../gateways/gateway.model';
import { PaymentModel } from './payment.model';

@Table({ tableName: 'refunds' })
export class RefundModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  @Column({ type: DataType.STRING(64), allowNull: false }) declare paymentId: string;
  /** The payment's customer, copied as the refund is written (a payment's customer never changes): the list's `customerId` filter. */
  @Column(DataType.STRING(64)) declare customerId: string | null;
  @Column({ type: DataType.BIGINT, allowNull: false }) declare amount: number;
  @Column({ type: DataType.STRING(3), allowNull: false }) declare currency: string;
  @Column(DataType.STRING(200)) declare reason: string | null;
  @Column({ type: DataType.STRING(20), allowNull: false }) declare status: string;
  @Column(DataType.STRING(64)) declare gatewayId: string | null;
  @Column(DataType.STRING(255)) declare gatewayReference: string | null;
  @Column(DataType.STRING(64)) declare failureCode: string | null;
  @Column(DataType.TEXT) declare failureMessage: string | null;
  /** On the database's clock, as `pendingSince`: see LeaseStore. */
  @Column(DataType.DATE(3)) declare leaseUntil: Date | null;
  /** When the row was written pending, on the database's clock (recovery measures ages on it). */
  @Column(DataType.DATE(3)) declare pendingSince: Date | null;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare updatedAt: Date;
  /** The Idempotency-Key claimed in the reservation write, if any. */
  @Column(DataType.STRING(255)) declare idempotencyKey: string | null;

  @BelongsTo(() => AccountModel, { foreignKey: 'accountId', constraints: false }) declare account?: AccountModel;
  @BelongsTo(() => PaymentModel, { foreignKey: 'paymentId', constraints: false }) declare payment?: PaymentModel;
  @BelongsTo(() => GatewayModel, { foreignKey: 'gatewayId', constraints: false }) declare gateway?: GatewayModel | null;
}
