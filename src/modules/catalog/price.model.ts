import { Column, DataType, Model, Table } from 'sequelize-typescript';

@Table({ tableName: 'prices' })
export class PriceModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column(DataType.STRING(64)) declare accountId: string;
  @Column(DataType.STRING(4)) declare mode: 'test' | 'live';
  @Column(DataType.STRING(64)) declare productId: string;
  @Column(DataType.BIGINT) declare unitAmount: number;
  @Column(DataType.STRING(3)) declare currency: string;
  @Column(DataType.STRING(5)) declare recurringInterval: string | null;
  @Column(DataType.INTEGER) declare recurringIntervalCount: number | null;
  @Column(DataType.STRING(200)) declare nickname: string | null;
  @Column(DataType.BOOLEAN) declare active: boolean;
  @Column(DataType.TEXT) declare metadata: string;
  @Column(DataType.DATE(3)) declare createdAt: Date;
  @Column(DataType.DATE(3)) declare updatedAt: Date;
}
