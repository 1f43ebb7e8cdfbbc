import { BelongsTo, Column, DataType, Model, Table } from 'sequelize-typescript';
import { ProductModel } from './product.model';

@Table({ tableName: 'prices' })
export class PriceModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  @Column({ type: DataType.STRING(64), allowNull: false }) declare productId: string;
  @Column({ type: DataType.BIGINT, allowNull: false }) declare unitAmount: number;
  @Column({ type: DataType.STRING(3), allowNull: false }) declare currency: string;
  @Column(DataType.STRING(5)) declare recurringInterval: string | null;
  @Column(DataType.INTEGER) declare recurringIntervalCount: number | null;
  @Column(DataType.STRING(200)) declare nickname: string | null;
  @Column({ type: DataType.BOOLEAN, allowNull: false, defaultValue: true }) declare active: boolean;
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '{}' }) declare metadata: string;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare updatedAt: Date;

  @BelongsTo(() => ProductModel, { foreignKey: 'productId' }) declare product?: ProductModel;
}
