import { BelongsTo, Column, DataType, Model, Table } from 'sequelize-typescript';

@Table({ tableName: 'invoices' })
export class InvoiceModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare accountId: string;
  @Column({ type: DataType.STRING(4), allowNull: false }) declare mode: 'test' | 'live';
  @Column({ type: DataType.STRING(32), allowNull: false }) declare number: string;
  @Column({ type: DataType.INTEGER, allowNull: false }) declare numberSeq: number;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare customerId: string;
  @Column(DataType.STRING(64)) declare subscriptionId: string | null;
  @Column({ type: DataType.STRING(8), allowNull: false }) declare status: 'draft' | 'sent' | 'paid' | 'void';
  // `requires_action` is stored as `needs_action` (the column is 12 characters wide; InvoiceStore maps it).
  @Column({ type: DataType.STRING(12), allowNull: false }) declare paymentStatus: 'unpaid' | 'processing' | 'needs_action' | 'paid' | 'failed';
  @Column({ type: DataType.STRING(3), allowNull: false }) declare currency: string;
  @Column({ type: DataType.BIGINT, allowNull: false }) declare subtotal: number;
  @Column({ type: DataType.BIGINT, allowNull: false }) declare total: number;
  @Column({ type: DataType.BIGINT, allowNull: false }) declare amountPaid: number;
  @Column({ type: DataType.BIGINT, allowNull: false }) declare amountDue: number;
  /** What the invoice took from the customer's credit balance (migration 0021). */
  @Column({ type: DataType.BIGINT, allowNull: false, defaultValue: 0 }) declare creditApplied: number;
  /** The exclusive taxes (migration 0024); `total` = `subtotal` + `tax`. */
  @Column({ type: DataType.BIGINT, allowNull: false, defaultValue: 0 }) declare tax: number;
  /** JSON: per tax rate its name, percentage, taxable amount and tax (TaxBreakdownEntry[]). */
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '[]' }) declare taxBreakdown: string;
  /** JSON: the tax rate ids of lines that name none of their own. */
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '[]' }) declare defaultTaxRateIds: string;
  /** The customer's `taxExempt` the taxes were computed with. */
  @Column({ type: DataType.STRING(8), allowNull: false, defaultValue: 'none' }) declare customerTaxExempt: 'none' | 'exempt' | 'reverse';
  @Column(DataType.DATE(3)) declare dueDate: Date | null;
  @Column(DataType.TEXT) declare memo: string | null;
  @Column(DataType.DATE(3)) declare sentAt: Date | null;
  @Column(DataType.DATE(3)) declare paidAt: Date | null;
  @Column(DataType.DATE(3)) declare voidedAt: Date | null;
  @Column({ type: DataType.BOOLEAN, allowNull: false, defaultValue: false }) declare paidOutOfBand: boolean;
  @Column(DataType.STRING(8)) declare emailStatus: 'queued' | 'sent' | 'failed' | null;
  @Column(DataType.STRING(64)) declare latestPaymentId: string | null;
  @Column({ type: DataType.INTEGER, allowNull: false, defaultValue: 0 }) declare paymentAttempts: number;
  @Column(DataType.DATE(3)) declare billingPeriodStart: Date | null;
  @Column(DataType.STRING(24)) declare billingReason: string | null;
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '{}' }) declare metadata: string;
  /** JSON: the seller and the buyer as the invoice left `draft` (InvoiceParties, migration 0025); a draft shows the live ones. */
  @Column(DataType.TEXT) declare parties: string | null;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare updatedAt: Date;
}

@Table({ tableName: 'invoice_line_items', updatedAt: false })
export class InvoiceLineItemModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare id: string;
  @Column({ type: DataType.STRING(64), allowNull: false }) declare invoiceId: string;
  @Column({ type: DataType.INTEGER, allowNull: false }) declare position: number;
  @Column({ type: DataType.STRING(500), allowNull: false }) declare description: string;
  @Column({ type: DataType.INTEGER, allowNull: false }) declare quantity: number;
  @Column({ type: DataType.BIGINT, allowNull: false }) declare unitAmount: number;
  @Column({ type: DataType.BIGINT, allowNull: false }) declare amount: number;
  @Column(DataType.DATE(3)) declare periodStart: Date | null;
  @Column(DataType.DATE(3)) declare periodEnd: Date | null;
  @Column({ type: DataType.BOOLEAN, allowNull: false, defaultValue: false }) declare proration: boolean;
  /** JSON: the line's own tax rate ids (migration 0024); none: the invoice's defaults apply. */
  @Column({ type: DataType.TEXT, allowNull: false, defaultValue: '[]' }) declare taxRateIds: string;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare createdAt: Date;

  @BelongsTo(() => InvoiceModel, { foreignKey: 'invoiceId' }) declare invoice?: InvoiceModel;
}

@Table({ tableName: 'invoice_number_sequences', createdAt: false })
export class InvoiceNumberSequenceModel extends Model {
  @Column({ type: DataType.STRING(64), primaryKey: true }) declare accountId: string;
  @Column({ type: DataType.STRING(4), primaryKey: true }) declare mode: 'test' | 'live';
  @Column({ type: DataType.INTEGER, allowNull: false }) declare lastNumber: number;
  @Column({ type: DataType.DATE(3), allowNull: false }) declare updatedAt: Date;
}
