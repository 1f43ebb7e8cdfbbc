import { Column, DataType, Model, Table } from 'sequelize-typescript';

@Table({ tableName: 'accounts' })
export class AccountModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column(DataType.STRING(200)) declare name: string;
  @Column(DataType.INTEGER) declare rateLimitPerMinute: number | null;
  @Column(DataType.DATE(3)) declare createdAt: Date;
  @Column(DataType.DATE(3)) declare updatedAt: Date;
}
