import { Column, DataType, Model, Table } from 'sequelize-typescript';

/** A claimed Idempotency-Key and, once finished, the response it answers retries with. */
@Table({ tableName: 'idempotency_keys' })
export class IdempotencyKeyModel extends Model {
  /** Account and mode the key belongs to (`idempotencyScope`), or a public route's target. */
  @Column({ type: DataType.STRING(80), primaryKey: true }) declare scope: string;
  @Column({ type: DataType.STRING(255), primaryKey: true }) declare idempotencyKey: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare requestHash: string;
  @Column({ type: DataType.STRING(12), allowNull: false }) declare state: string;
  @Column(DataType.INTEGER) declare responseStatus: number | null;
  @Column(DataType.TEXT) declare responseBody: string | null;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare expiresAt: Date;
  /** The payment or refund whose first write claimed the key. */
  @Column(DataType.STRING(64)) declare objectId: string | null;
}
