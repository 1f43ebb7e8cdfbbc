import { BelongsTo, Column, DataType, Model, Table } from 'sequelize-typescript';
import { AccountModel } from '../accounts/account.model';

/** A configured payment gateway; soft-deleted so past payments keep one to refund through. */
@Table({ tableName: 'gateways' })
export class GatewayModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  @Column({ type: DataType.STRING(200), allowNull: false }) declare name: string;
  @Column({ type: DataType.STRING(40), allowNull: false }) declare type: string;
  /** SecretBox-sealed JSON object of credentials. */
  @Column(DataType.TEXT) declare credentialsSealed: string | null;
  /** JSON object, as text. */
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '{}' }) declare settings: string;
  /** JSON array of currency codes, as text; null accepts every currency. */
  @Column(DataType.TEXT) declare currencies: string | null;
  @Column({ type: DataType.BOOLEAN, allowNull: false, defaultValue: true }) declare enabled: boolean;
  @Column(DataType.DATE(3)) declare deletedAt: Date | null;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare updatedAt: Date;

  @BelongsTo(() => AccountModel, { foreignKey: 'accountId', constraints: false }) declare account?: AccountModel;
}
