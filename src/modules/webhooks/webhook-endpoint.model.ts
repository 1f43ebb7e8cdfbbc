import { BelongsTo, Column, DataType, Model, Table } from 'sequelize-typescript';
import { AccountModel } from '../accounts/account.model';

/** A registered webhook receiver; soft-deleted so its attempt log outlives it. */
@Table({ tableName: 'webhook_endpoints' })
export class WebhookEndpointModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  @Column({ type: DataType.STRING(2048), allowNull: false }) declare url: string;
  @Column(DataType.TEXT) declare description: string | null;
  /** JSON array of event types (or ["*"]), as text. */
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '[]' }) declare events: string;
  /** SecretBox-sealed whsec_ secret; never stored in clear. */
  @Column({ type: DataType.TEXT, allowNull: false }) declare secretSealed: string;
  /** The secret a rotation replaced (sealed), signing until previousSecretExpiresAt. */
  @Column(DataType.TEXT) declare previousSecretSealed: string | null;
  @Column(DataType.DATE(3)) declare previousSecretExpiresAt: Date | null;
  @Column({ type: DataType.STRING(10), allowNull: false, defaultValue: 'enabled' }) declare status: 'enabled' | 'disabled';
  @Column(DataType.STRING(40)) declare disabledReason: string | null;
  /** When the receiver's current run of 410 answers began; null when its last answer was not a 410. */
  @Column(DataType.DATE(3)) declare goneSince: Date | null;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare updatedAt: Date;
  @Column(DataType.DATE(3)) declare deletedAt: Date | null;

  @BelongsTo(() => AccountModel, { foreignKey: 'accountId', constraints: false }) declare account?: AccountModel;
}
