import { BelongsTo, Column, DataType, Model, Table } from 'sequelize-typescript';
import { AccountModel } from '../accounts/account.model';

/** An exchange rate set by an account; the rate is decimal text, never a float. */
@Table({ tableName: 'fx_rates' })
export class FxRateModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare accountId: string;
  @Column({ type: DataType.STRING(4), primaryKey: true }) declare mode: 'test' | 'live';
  @Column({ type: DataType.STRING(3), primaryKey: true }) declare fromCurrency: string;
  @Column({ type: DataType.STRING(3), primaryKey: true }) declare toCurrency: string;
  @Column({ type: DataType.STRING(40), allowNull: false }) declare rate: string;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare updatedAt: Date;

  @BelongsTo(() => AccountModel, { foreignKey: 'accountId', constraints: false }) declare account?: AccountModel;
}
