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
  /** The seller's address on invoices: JSON `{line1, line2, postalCode, city, state, country}` (core/parties.ts), or null. */
  @Column(DataType.TEXT) declare address: string | null;
  /** The seller's tax id on invoices (e.g. a VAT number). */
  @Column(DataType.STRING(64)) declare taxId: string | null;
  /** Where customers write with questions: printed on invoices. */
  @Column(DataType.STRING(320)) declare supportEmail: string | null;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare updatedAt: Date;
}
