import { BelongsTo, Column, DataType, Model, Table } from 'sequelize-typescript';
import { AccountModel } from '../accounts/account.model';

/** An event, written in the transaction of the change it reports. */
@Table({ tableName: 'events' })
export class EventModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  @Column({ type: DataType.STRING(64), allowNull: false }) declare type: string;
  /** `data.object.id`: the events of one object are listed by it (events_object_idx). */
  @Column({ type: DataType.STRING(64), allowNull: true }) declare objectId: string | null;
  /** JSON object, as text. */
  @Column({ type: DataType.TEXT, allowNull: false }) declare data: string;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;
  /**
   * Its place in the order events were written, the live streams' order (migration 0029):
   * PostgreSQL's column default (events_stream_seq); on SQLite EventStore's INSERT gives the
   * scope's highest + 1.
   */
  @Column({ type: DataType.BIGINT, allowNull: true }) declare seq: number | null;

  @BelongsTo(() => AccountModel, { foreignKey: 'accountId', constraints: false }) declare account?: AccountModel;
}
