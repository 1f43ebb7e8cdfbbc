import { Column, DataType, Model, Table } from 'sequelize-typescript';

@Table({ tableName: 'payment_links' })
export class PaymentLinkModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  @Column({ type: DataType.STRING(64), allowNull: false }) declare slug: string;
  @Column({ type: DataType.STRING(200), allowNull: false }) declare name: string;
  @Column(DataType.STRING(500)) declare description: string | null;
  @Column({ type: DataType.BIGINT, allowNull: false }) declare amount: number;
  @Column({ type: DataType.STRING(3), allowNull: false }) declare currency: string;
  @Column(DataType.STRING(64)) declare priceId: string | null;
  @Column({ type: DataType.STRING(10), allowNull: false }) declare status: 'active' | 'inactive';
  @Column({ type: DataType.TEXT, allowNull: false }) declare searchText: string;
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '{}' }) declare metadata: string;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare updatedAt: Date;
  /** Passed to the payments it makes (`automatic` | `manual`). */
  @Column({ type: DataType.STRING(9), allowNull: false, defaultValue: 'automatic' }) declare captureMethod: 'automatic' | 'manual';
}
