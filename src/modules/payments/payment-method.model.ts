import { BelongsTo, Column, DataType, Model, Table } from 'sequelize-typescript';
import { AccountModel } from '../accounts/account.model';
import { CustomerModel } from '../customers/customer.model';
import { GatewayModel } from '../gateways/gateway.model';

/** A saved card: the gateway's token and display details only, never the number or CVC. */
@Table({ tableName: 'payment_methods' })
export class PaymentMethodModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  @Column({ type: DataType.STRING(64), allowNull: false }) declare customerId: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare gatewayId: string;
  @Column({ type: DataType.TEXT, allowNull: false }) declare gatewayToken: string;
  @Column({ type: DataType.STRING(20), allowNull: false }) declare brand: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare last4: string;
  @Column({ type: DataType.INTEGER, allowNull: false }) declare expMonth: number;
  @Column({ type: DataType.INTEGER, allowNull: false }) declare expYear: number;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare fingerprint: string;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare updatedAt: Date;

  @BelongsTo(() => AccountModel, { foreignKey: 'accountId', constraints: false }) declare account?: AccountModel;
  @BelongsTo(() => CustomerModel, { foreignKey: 'customerId', constraints: false }) declare customer?: CustomerModel;
  @BelongsTo(() => GatewayModel, { foreignKey: 'gatewayId', constraints: false }) declare gateway?: GatewayModel | null;
}
