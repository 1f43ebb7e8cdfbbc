import { BelongsTo, Column, DataType, Model, Table } from 'sequelize-typescript';
import { AccountModel } from '../accounts/account.model';

/**
 * A public pay attempt that counts against the caps of API.md §11 (migration 0020): written
 * before the gateway is asked, deleted when the attempt succeeded or was refused before any
 * gateway call. What is left are failed attempts, and ones still running (or whose outcome never came).
 */
@Table({ tableName: 'public_pay_attempts' })
export class PublicPayAttemptModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  @Column({ type: DataType.STRING(64), allowNull: false }) declare targetId: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare clientAddress: string;
  /** `running` until the gateway's answer, `failed` after a decline (a success deletes the row). */
  @Column({ type: DataType.STRING(8), allowNull: false }) declare status: 'running' | 'failed';
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;

  @BelongsTo(() => AccountModel, { foreignKey: 'accountId', constraints: false }) declare account?: AccountModel;
}
