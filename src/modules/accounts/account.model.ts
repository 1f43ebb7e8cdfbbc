import { Column, DataType, Model, Table } from 'sequelize-typescript';

@Table({ tableName: 'accounts' })
export class AccountModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(200), allowNull: false }) declare name: string;
  @Column(DataType.INTEGER) declare rateLimitPerMinute: number | null;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare updatedAt: Date;
}
