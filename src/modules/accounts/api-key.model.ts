import { Column, DataType, Model, Table } from 'sequelize-typescript';

@Table({ tableName: 'api_keys' })
export class ApiKeyModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column(DataType.STRING(64)) declare accountId: string;
  @Column(DataType.STRING(4)) declare mode: 'test' | 'live';
  @Column(DataType.STRING(64)) declare keyHash: string;
  @Column(DataType.STRING(32)) declare keyHint: string;
  @Column(DataType.STRING(200)) declare name: string | null;
  @Column(DataType.TEXT) declare permissions: string;
  @Column(DataType.DATE(3)) declare revokedAt: Date | null;
  @Column(DataType.DATE(3)) declare createdAt: Date;
  @Column(DataType.DATE(3)) declare updatedAt: Date;
}
