import { Column, DataType, Model, Table } from 'sequelize-typescript';

/** An export of a list to a file (migration 0028): what was asked, where the file stands, the worker's claim. */
@Table({ tableName: 'exports' })
export class ExportModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  @Column({ type: DataType.STRING(20), allowNull: false }) declare resource: string;
  @Column({ type: DataType.STRING(5), allowNull: false }) declare format: string;
  /** JSON: the list's query parameters, as given. */
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '{}' }) declare filters: string;
  /** JSON: the permissions of the key that asked; the worker reads the list with them. */
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '[]' }) declare permissions: string;
  @Column({ type: DataType.STRING(10), allowNull: false }) declare status: string;
  @Column({ type: DataType.INTEGER, allowNull: false, defaultValue: 0 }) declare attempts: number;
  @Column(DataType.STRING(32)) declare lockToken: string | null;
  /** On the database's clock (instances compare each other's leases). */
  @Column(DataType.DATE(3)) declare lockedUntil: Date | null;
  @Column(DataType.BIGINT) declare rowsExpected: number | null;
  @Column({ type: DataType.BIGINT, allowNull: false, defaultValue: 0 }) declare rowsWritten: number;
  @Column({ type: DataType.BIGINT, allowNull: false, defaultValue: 0 }) declare bytesWritten: number;
  /** JSON `{createdAt, id}`: the last row written, where the next page starts. */
  @Column(DataType.TEXT) declare resumeAfter: string | null;
  @Column(DataType.TEXT) declare failureMessage: string | null;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare expiresAt: Date;
  @Column(DataType.DATE(3)) declare completedAt: Date | null;
  @Column(DataType.DATE(3)) declare fileDeletedAt: Date | null;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare updatedAt: Date;
}
