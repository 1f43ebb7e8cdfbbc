import { Column, DataType, Model, Table } from 'sequelize-typescript';

@Table({ tableName: 'tax_rates' })
export class TaxRateModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  @Column({ type: DataType.STRING(50), allowNull: false }) declare displayName: string;
  @Column(DataType.STRING(500)) declare description: string | null;
  /** The percentage in ten-thousandths (19.5 % → 195000): exact, and never changed. */
  @Column({ type: DataType.INTEGER, allowNull: false }) declare percentageE4: number;
  @Column({ type: DataType.BOOLEAN, allowNull: false }) declare inclusive: boolean;
  @Column(DataType.STRING(2)) declare country: string | null;
  @Column(DataType.STRING(50)) declare jurisdiction: string | null;
  @Column({ type: DataType.BOOLEAN, allowNull: false, defaultValue: true }) declare active: boolean;
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '{}' }) declare metadata: string;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare updatedAt: Date;
}
