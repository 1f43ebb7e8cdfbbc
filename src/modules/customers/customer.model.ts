import { Column, DataType, Model, Table } from 'sequelize-typescript';

@Table({ tableName: 'customers' })
export class CustomerModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column(DataType.STRING(64)) declare accountId: string;
  @Column(DataType.STRING(4)) declare mode: 'test' | 'live';
  @Column(DataType.STRING(320)) declare email: string;
  @Column(DataType.STRING(320)) declare emailNormalized: string;
  @Column(DataType.STRING(200)) declare name: string | null;
  @Column(DataType.STRING(2)) declare country: string | null;
  @Column(DataType.STRING(40)) declare phone: string | null;
  @Column(DataType.STRING(64)) declare defaultPaymentMethodId: string | null;
  @Column(DataType.STRING(64)) declare testClockId: string | null;
  @Column(DataType.TEXT) declare metadata: string;
  @Column(DataType.DATE(3)) declare createdAt: Date;
  @Column(DataType.DATE(3)) declare updatedAt: Date;
}
