import { BelongsTo, Column, DataType, Model, Table } from 'sequelize-typescript';
import { AccountModel } from '../accounts/account.model';
import { CustomerModel } from '../customers/customer.model';
import { GatewayModel } from '../gateways/gateway.model';

/** A payment; amounts are integer minor units (int8), JSON columns are text. */
@Table({ tableName: 'payments' })
export class PaymentModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  @Column(DataType.STRING(64)) declare customerId: string | null;
  @Column({ type: DataType.BIGINT, allowNull: false }) declare amount: number;
  @Column({ type: DataType.STRING(3), allowNull: false }) declare currency: string;
  @Column({ type: DataType.STRING(3), allowNull: false }) declare originalCurrency: string;
  @Column(DataType.BIGINT) declare originalAmount: number | null;
  /** Decimal text, never a float. */
  @Column(DataType.STRING(40)) declare exchangeRate: string | null;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare paymentMethod: string;
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '{}' }) declare paymentMethodDetails: string;
  @Column(DataType.TEXT) declare description: string | null;
  /** The e-mail an anonymous payer gave on a hosted page (no customer is attached). */
  @Column(DataType.STRING(320)) declare receiptEmail: string | null;
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '{}' }) declare metadata: string;
  @Column({ type: DataType.STRING(20), allowNull: false }) declare status: string;
  @Column(DataType.STRING(64)) declare failureCode: string | null;
  @Column(DataType.TEXT) declare failureMessage: string | null;
  @Column({ type: DataType.BIGINT, allowNull: false, defaultValue: 0 }) declare amountRefunded: number;
  /** A configured gateway, or the built-in test simulator (which has no row). */
  @Column(DataType.STRING(64)) declare gatewayId: string | null;
  @Column(DataType.STRING(255)) declare gatewayReference: string | null;
  /** JSON array of gateway ids, as text. */
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '[]' }) declare routingPlan: string;
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '' }) declare searchText: string;
  /** On the database's clock, as `pendingSince`: see LeaseStore. */
  @Column(DataType.DATE(3)) declare leaseUntil: Date | null;
  /** When the row was written pending, on the database's clock (recovery measures ages on it). */
  @Column(DataType.DATE(3)) declare pendingSince: Date | null;
  /** JSON array of gateway attempts, as text. */
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '[]' }) declare attempts: string;
  @Column(DataType.STRING(64)) declare invoiceId: string | null;
  @Column(DataType.STRING(64)) declare subscriptionId: string | null;
  @Column(DataType.STRING(64)) declare checkoutSessionId: string | null;
  @Column(DataType.STRING(64)) declare paymentLinkId: string | null;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare updatedAt: Date;
  @Column({ type: DataType.STRING(9), allowNull: false, defaultValue: 'automatic' }) declare captureMethod: 'automatic' | 'manual';
  /** What an uncaptured authorisation still holds (0 otherwise). */
  @Column({ type: DataType.BIGINT, allowNull: false, defaultValue: 0 }) declare amountCapturable: number;
  /** What was taken from the card; refunds are held to it. */
  @Column({ type: DataType.BIGINT, allowNull: false, defaultValue: 0 }) declare amountCaptured: number;
  /** JSON `{type, url}` while a 3-D Secure challenge waits for the customer. */
  @Column(DataType.TEXT) declare nextAction: string | null;
  /** When an unanswered challenge fails (`authentication_expired`). */
  @Column(DataType.DATE(3)) declare actionExpiresAt: Date | null;
  /** When an uncaptured authorisation is voided. */
  @Column(DataType.DATE(3)) declare captureBefore: Date | null;
  /** A capture, cancel, expiry or 3-D Secure read under way (`capture:<amount>`, `cancel`, …), leased by `leaseUntil`. */
  @Column(DataType.STRING(40)) declare pendingOperation: string | null;
  /** Where the customer is sent once a challenge is answered. */
  @Column(DataType.TEXT) declare returnUrl: string | null;
  /** The Idempotency-Key claimed in the pending write, if any. */
  @Column(DataType.STRING(255)) declare idempotencyKey: string | null;

  @BelongsTo(() => AccountModel, { foreignKey: 'accountId', constraints: false }) declare account?: AccountModel;
  @BelongsTo(() => CustomerModel, { foreignKey: 'customerId', constraints: false }) declare customer?: CustomerModel | null;
  @BelongsTo(() => GatewayModel, { foreignKey: 'gatewayId', constraints: false }) declare gateway?: GatewayModel | null;
}
