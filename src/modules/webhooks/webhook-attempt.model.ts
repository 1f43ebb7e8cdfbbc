import { BelongsTo, Column, DataType, Model, Table } from 'sequelize-typescript';
import { AccountModel } from '../accounts/account.model';
import { EventModel } from '../events/event.model';
import { WebhookEndpointModel } from './webhook-endpoint.model';
import { WebhookDeliveryModel } from './webhook-delivery.model';

/** The log of one HTTP attempt at a delivery. */
@Table({ tableName: 'webhook_attempts' })
export class WebhookAttemptModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  @Column({ type: DataType.STRING(64), allowNull: false }) declare endpointId: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare deliveryId: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare eventId: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare eventType: string;
  @Column({ type: DataType.INTEGER, allowNull: false }) declare attempt: number;
  @Column({ type: DataType.BOOLEAN, allowNull: false }) declare succeeded: boolean;
  @Column(DataType.INTEGER) declare statusCode: number | null;
  @Column({ type: DataType.INTEGER, allowNull: false }) declare latencyMs: number;
  @Column(DataType.STRING(255)) declare error: string | null;
  @Column(DataType.DATE(3)) declare nextRetryAt: Date | null;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;

  @BelongsTo(() => AccountModel, { foreignKey: 'accountId', constraints: false }) declare account?: AccountModel;
  @BelongsTo(() => WebhookEndpointModel, { foreignKey: 'endpointId', constraints: false }) declare endpoint?: WebhookEndpointModel;
  @BelongsTo(() => WebhookDeliveryModel, { foreignKey: 'deliveryId', constraints: false }) declare delivery?: WebhookDeliveryModel;
  @BelongsTo(() => EventModel, { foreignKey: 'eventId', constraints: false }) declare event?: EventModel;
}
