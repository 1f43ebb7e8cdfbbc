import { BelongsTo, Column, DataType, Model, Table } from 'sequelize-typescript';
import { AccountModel } from '../accounts/account.model';
import { EventModel } from '../events/event.model';
import { WebhookEndpointModel } from './webhook-endpoint.model';

/** One event owed to one endpoint: the durable outbox row the delivery loop claims. */
@Table({ tableName: 'webhook_deliveries' })
export class WebhookDeliveryModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  @Column({ type: DataType.STRING(64), allowNull: false }) declare endpointId: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare eventId: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare eventType: string;
  /** The exact bytes POSTed and signed. */
  @Column({ type: DataType.TEXT, allowNull: false }) declare payload: string;
  /** `held`: its endpoint is disabled; enabling it queues the delivery again. */
  @Column({ type: DataType.STRING(10), allowNull: false }) declare status: 'pending' | 'held' | 'delivered' | 'failed' | 'abandoned';
  /** How many HTTP attempts were made (the log of them is `attemptLog`). */
  @Column({ type: DataType.INTEGER, allowNull: false, defaultValue: 0 }) declare attempts: number;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare nextAttemptAt: Date;
  @Column(DataType.DATE(3)) declare firstAttemptAt: Date | null;
  @Column(DataType.INTEGER) declare lastStatusCode: number | null;
  @Column(DataType.STRING(255)) declare lastError: string | null;
  @Column(DataType.INTEGER) declare lastLatencyMs: number | null;
  @Column(DataType.DATE(3)) declare lockedUntil: Date | null;
  @Column(DataType.STRING(32)) declare lockToken: string | null;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare updatedAt: Date;
  @Column(DataType.DATE(3)) declare deliveredAt: Date | null;

  @BelongsTo(() => AccountModel, { foreignKey: 'accountId', constraints: false }) declare account?: AccountModel;
  @BelongsTo(() => WebhookEndpointModel, { foreignKey: 'endpointId', constraints: false }) declare endpoint?: WebhookEndpointModel;
  @BelongsTo(() => EventModel, { foreignKey: 'eventId', constraints: false }) declare event?: EventModel;
}
