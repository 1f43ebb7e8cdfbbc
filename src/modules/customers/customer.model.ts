import { Column, DataType, Model, Table } from 'sequelize-typescript';

@Table({ tableName: 'customers' })
export class CustomerModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  @Column({ type: DataType.STRING(320), allowNull: false }) declare email: string;
  @Column({ type: DataType.STRING(320), allowNull: false }) declare emailNormalized: string;
  @Column(DataType.STRING(200)) declare name: string | null;
  @Column(DataType.STRING(2)) declare country: string | null;
  @Column(DataType.STRING(40)) declare phone: string | null;
  @Column(DataType.STRING(64)) declare defaultPaymentMethodId: string | null;
  @Column(DataType.STRING(64)) declare testClockId: string | null;
  @Column(DataType.STRING(16)) declare locale: string | null;
  /** The buyer's address on invoices: JSON `{line1, line2, postalCode, city, state, country}` (core/parties.ts), or null. */
  @Column(DataType.TEXT) declare address: string | null;
  /** JSON `[{type, value}]`, `[]` when none. */
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '[]' }) declare taxIds: string;
  /** `none` | `exempt` | `reverse` (migration 0024): whether its invoices carry tax. */
  @Column({ type: DataType.STRING(8), allowNull: false, defaultValue: 'none' }) declare taxExempt: 'none' | 'exempt' | 'reverse';
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '{}' }) declare metadata: string;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare updatedAt: Date;
}
