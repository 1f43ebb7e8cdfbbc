import { BelongsTo, Column, DataType, Model, Table } from 'sequelize-typescript';
import { AccountModel } from '../accounts/account.model';

/** The routing rules of an (account, mode): one JSON document, as text. */
@Table({ tableName: 'routing_configs' })
export class RoutingConfigModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare accountId: string;
  @Column({ type: DataType.STRING(4), primaryKey: true }) declare mode: 'test' | 'live';
  @Column({ type: DataType.TEXT, allowNull: false }) declare config: string;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare updatedAt: Date;

  @BelongsTo(() => AccountModel, { foreignKey: 'accountId', constraints: false }) declare account?: AccountModel;
}
