import { Column, DataType, Model, Table } from 'sequelize-typescript';

@Table({ tableName: 'accounts' })
export class AccountModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(200), allowNull: false }) declare name: string;
  @Column(DataType.INTEGER) declare rateLimitPerMinute: number | null;
  @Column({ type: DataType.STRING(12), allowNull: false, defaultValue: 'INV' }) declare invoicePrefix: string;
  @Column({ type: DataType.STRING(100), allowNull: false, defaultValue: '[1,3,7]' }) declare dunningRetryDays: string;
  /** Failed public pays per mode in a rolling hour before every public pay of that mode is refused (API.md §11). */
  @Column({ type: DataType.INTEGER, allowNull: false, defaultValue: 50 }) declare publicDeclinesPerHour: number;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare updatedAt: Date;
}
