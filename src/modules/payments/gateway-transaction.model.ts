import { BelongsTo, Column, DataType, Model, Table } from 'sequelize-typescript';
import { AccountModel } from '../accounts/account.model';
import { GatewayModel } from '../gateways/gateway.model';
import { PaymentModel } from './payment.model';
import { RefundModel } from './refund.model';

/** The log of one gateway call made for a payment or a refund. */
@Table({ tableName: 'gateway_transactions' })
export class GatewayTransactionModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  @Column(DataType.STRING(64)) declare paymentId: string | null;
  @Column(DataType.STRING(64)) declare refundId: string | null;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare gatewayId: string;
  @Column({ type: DataType.STRING(40), allowNull: false }) declare gatewayType: string;
  @Column({ type: DataType.STRING(12), allowNull: false }) declare kind: string;
  @Column({ type: DataType.INTEGER, allowNull: false }) declare attempt: number;
  @Column({ type: DataType.STRING(255), allowNull: false }) declare idempotencyKey: string;
  @Column({ type: DataType.STRING(20), allowNull: false }) declare outcome: string;
  @Column(DataType.STRING(64)) declare code: string | null;
  @Column(DataType.TEXT) declare message: string | null;
  @Column(DataType.STRING(255)) declare reference: string | null;
  @Column({ type: DataType.INTEGER, allowNull: false }) declare latencyMs: number;
  /** Redacted JSON of what was sent and received, as text. */
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '{}' }) declare request: string;
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '{}' }) declare response: string;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;

  @BelongsTo(() => AccountModel, { foreignKey: 'accountId', constraints: false }) declare account?: AccountModel;
  @BelongsTo(() => PaymentModel, { foreignKey: 'paymentId', constraints: false }) declare payment?: PaymentModel | null;
  @BelongsTo(() => RefundModel, { foreignKey: 'refundId', constraints: false }) declare refund?: RefundModel | null;
  @BelongsTo(() => GatewayModel, { foreignKey: 'gatewayId', constraints: false }) declare gateway?: GatewayModel | null;
}
