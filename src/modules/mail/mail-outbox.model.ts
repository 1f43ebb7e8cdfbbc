import { BelongsTo, Column, DataType, Model, Table } from 'sequelize-typescript';
import { AccountModel } from '../accounts/account.model';
import type { MailStatus } from './mail.types';

/** One queued e-mail: the durable outbox row the mail worker claims, sends and settles. */
@Table({ tableName: 'mail_outbox' })
export class MailOutboxModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  /** The object whose `emailStatus` follows the mail's (`invoice`). */
  @Column({ type: DataType.STRING(32), allowNull: false }) declare aboutType: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare aboutId: string;
  @Column({ type: DataType.STRING(320), allowNull: false }) declare toAddress: string;
  @Column({ type: DataType.TEXT, allowNull: false }) declare subject: string;
  @Column({ type: DataType.TEXT, allowNull: false }) declare textBody: string;
  @Column({ type: DataType.TEXT, allowNull: false }) declare htmlBody: string;
  /** JSON `[{filename, contentType, source}]`, rendered when the mail is sent. */
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '[]' }) declare attachments: string;
  @Column({ type: DataType.STRING(10), allowNull: false }) declare status: MailStatus;
  /** Send attempts made, counted when a worker claims the row. */
  @Column({ type: DataType.INTEGER, allowNull: false, defaultValue: 0 }) declare attempts: number;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare nextAttemptAt: Date;
  @Column(DataType.DATE(3)) declare firstAttemptAt: Date | null;
  @Column(DataType.STRING(255)) declare lastError: string | null;
  @Column(DataType.DATE(3)) declare lockedUntil: Date | null;
  @Column(DataType.STRING(32)) declare lockToken: string | null;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare updatedAt: Date;
  @Column(DataType.DATE(3)) declare sentAt: Date | null;

  @BelongsTo(() => AccountModel, { foreignKey: 'accountId', constraints: false }) declare account?: AccountModel;
}
