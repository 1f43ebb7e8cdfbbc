import { Column, DataType, Model, Table } from 'sequelize-typescript';

@Table({ tableName: 'products' })
export class ProductModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column(DataType.STRING(64)) declare accountId: string;
  @Column(DataType.STRING(4)) declare mode: 'test' | 'live';
  @Column(DataType.STRING(250)) declare name: string;
  @Column(DataType.TEXT) declare description: string | null;
  @Column(DataType.BOOLEAN) declare active: boolean;
  @Column(DataType.TEXT) declare metadata: string;
  @Column(DataType.DATE(3)) declare createdAt: Date;
  @Column(DataType.DATE(3)) declare updatedAt: Date;
}
