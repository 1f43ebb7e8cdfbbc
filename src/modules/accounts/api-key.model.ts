import { BelongsTo, Column, DataType, Model, Table } from 'sequelize-typescript';
import { AccountModel } from './account.model';

@Table({ tableName: 'api_keys' })
export class ApiKeyModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  @Column({ type: DataType.STRING(64), allowNull: false }) declare keyHash: string;
  @Column({ type: DataType.STRING(32), allowNull: false }) declare keyHint: string;
  @Column(DataType.STRING(200)) declare name: string | null;
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '["*"]' }) declare permissions: string;
  @Column(DataType.DATE(3)) declare revokedAt: Date | null;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare updatedAt: Date;

  @BelongsTo(() => AccountModel, { foreignKey: 'accountId' }) declare account?: AccountModel;
}
