import { Arg, Args, ArgsType, Ctx, Field, FieldResolver, ID, Info, InputType, Int, Mutation, ObjectType, Query, Resolver, Root } from 'type-graphql';
import { GraphQLJSONObject } from 'graphql-scalars';
import type { GraphQLResolveInfo } from 'graphql';
import type { GqlContext } from './context';
import { NodeInterface } from './types/node';
import { Amount, DateTime, NESTED_LIST_DESCRIPTION, NestedListArgs, PageArgs, defined, listOptions, nestedLimit, connection, ListType } from './types/common';
import { InvoicePaymentStatus, InvoiceSortField, InvoiceStatus, Currency, InvoiceEmailStatus } from './types/enums';
import { CustomerType } from './customer.resolver';
import { PaymentType } from './payment.resolver';
import { TaxBreakdownEntryType } from './tax-rate.resolver';
import { TaxExempt } from './types/enums';
import type { Invoice } from '../src/modules/invoices/invoice.service';
import type { Customer } from '../src/modules/customers/customer.service';

@ObjectType('InvoiceLineItem')
class InvoiceLineItemType {
  @Field(() => ID) id!: string;
  @Field(() => String) description!: string;
  @Field(() => Int) quantity!: number;
  @Field(() => Amount) unitAmount!: number;
  @Field(() => Amount) amount!: number;
  @Field(() => DateTime, { nullable: true }) periodStart!: string | null;
  @Field(() => DateTime, { nullable: true }) periodEnd!: string | null;
  @Field(() => Boolean) proration!: boolean;
  @Field(() => [String], { description: "The line's own tax rates (txr_…); empty: the invoice's defaultTaxRateIds apply." }) taxRateIds!: string[];
}

@ObjectType('Invoice', { implements: NodeInterface })
export class InvoiceType {
  @Field(() => ID) id!: string;
  @Field(() => String) object!: string;
  @Field(() => Boolean) livemode!: boolean;
  @Field(() => String, { description: 'Per account and mode, gapless: `INV-000042`.' }) number!: string;
  @Field(() => String) customerId!: string;
  @Field(() => String, { nullable: true }) subscriptionId!: string | null;
  @Field(() => InvoiceStatus) status!: string;
  @Field(() => InvoicePaymentStatus) paymentStatus!: string;
  @Field(() => Currency) currency!: string;
  @Field(() => [InvoiceLineItemType]) lineItems!: InvoiceLineItemType[];
  @Field(() => Amount) subtotal!: number;
  @Field(() => Amount, { description: 'The exclusive taxes (inclusive ones are inside the line amounts); total = subtotal + tax.' }) tax!: number;
  @Field(() => [TaxBreakdownEntryType], { description: 'Per tax rate: the sum of its lines taxed and rounded once.' }) taxBreakdown!: TaxBreakdownEntryType[];
  @Field(() => [String], { description: 'The tax rates of lines that name none of their own.' }) defaultTaxRateIds!: string[];
  @Field(() => TaxExempt, { description: "The customer's taxExempt the taxes were computed with; reverse: the invoice carries the reverse-charge notice." }) customerTaxExempt!: string;
  @Field(() => Amount) total!: number;
  @Field(() => Amount) amountPaid!: number;
  @Field(() => Amount) amountDue!: number;
  @Field(() => Amount, { description: "What the invoice took from the customer's credit balance; amountDue is total − creditApplied − what was paid." }) creditApplied!: number;
  @Field(() => DateTime, { nullable: true }) dueDate!: string | null;
  @Field(() => String, { nullable: true }) memo!: string | null;
  @Field(() => DateTime, { nullable: true }) sentAt!: string | null;
  @Field(() => DateTime, { nullable: true }) paidAt!: string | null;
  @Field(() => DateTime, { nullable: true }) voidedAt!: string | null;
  @Field(() => Boolean) paidOutOfBand!: boolean;
  @Field(() => InvoiceEmailStatus, { nullable: true, description: 'queued, sent or failed: where the invoice e-mail stands; null until sent.' }) emailStatus!: string | null;
  @Field(() => String, { nullable: true, description: 'The public page where the customer pays a sent invoice by card.' }) hostedUrl!: string | null;
  @Field(() => String, { nullable: true }) latestPaymentId!: string | null;
  @Field(() => GraphQLJSONObject) metadata!: Record<string, string>;
  @Field(() => DateTime) createdAt!: string;
  @Field(() => DateTime) updatedAt!: string;
}

@ObjectType('InvoiceList')
class InvoiceList extends ListType(InvoiceType, 'Invoice') {}

@InputType('InvoiceLineItemInput')
class InvoiceLineItemInput {
  @Field(() => String) description!: string;
  @Field(() => Int, { nullable: true }) quantity?: number;
  @Field(() => Amount) unitAmount!: number;
  @Field(() => [String], { nullable: true, description: "Tax rates (txr_…) of this line; none: the invoice's defaultTaxRateIds." }) taxRateIds?: string[];
}

@InputType('CreateInvoiceInput')
class CreateInvoiceInput {
  @Field(() => String) customerId!: string;
  @Field(() => String) currency!: string;
  @Field(() => [InvoiceLineItemInput]) lineItems!: InvoiceLineItemInput[];
  @Field(() => [String], { nullable: true, description: 'Tax rates (txr_…) of lines that name none of their own.' }) defaultTaxRateIds?: string[];
  @Field(() => String, { nullable: true, description: 'A date (YYYY-MM-DD, end of that day UTC) or an ISO 8601 instant.' }) dueDate?: string | null;
  @Field(() => String, { nullable: true }) memo?: string | null;
  @Field(() => GraphQLJSONObject, { nullable: true }) metadata?: Record<string, string>;
}

@InputType('UpdateInvoiceInput')
class UpdateInvoiceInput {
  @Field(() => [InvoiceLineItemInput], { nullable: true }) lineItems?: InvoiceLineItemInput[];
  @Field(() => [String], { nullable: true }) defaultTaxRateIds?: string[];
  @Field(() => String, { nullable: true }) dueDate?: string | null;
  @Field(() => String, { nullable: true }) memo?: string | null;
  @Field(() => GraphQLJSONObject, { nullable: true }) metadata?: Record<string, string | null>;
}

@ArgsType()
class InvoiceListArgs extends PageArgs(InvoiceSortField, { updatable: true }) {
  @Field(() => String, { nullable: true }) customerId?: string;
  @Field(() => String, { nullable: true }) subscriptionId?: string;
  @Field(() => InvoiceStatus, { nullable: true }) status?: string;
  @Field(() => [InvoiceStatus], { nullable: true, description: 'Any of these (REST: status=a,b); not with status.' }) statusIn?: string[];
}

@Resolver(() => InvoiceType)
export class InvoiceResolver {
  @Query(() => InvoiceType, { nullable: true })
  invoice(@Arg('id', () => ID) id: string, @Ctx() { services, rc }: GqlContext) {
    return services.invoices.retrieve(rc, id);
  }

  @Query(() => InvoiceList, { nullable: true })
  async invoices(@Args(() => InvoiceListArgs) args: InvoiceListArgs, @Ctx() { services, rc }: GqlContext, @Info() info: GraphQLResolveInfo) {
    return connection(args, (input) => services.invoices.list(rc, input, listOptions(info)));
  }

  @Mutation(() => InvoiceType, { nullable: true })
  createInvoice(@Arg('input', () => CreateInvoiceInput) input: CreateInvoiceInput, @Ctx() { services, rc, idem }: GqlContext) {
    return services.invoices.create(rc, { ...defined(input), lineItems: input.lineItems.map((l) => defined(l)) }, idem);
  }

  @Mutation(() => InvoiceType, { nullable: true })
  updateInvoice(@Arg('id', () => ID) id: string, @Arg('input', () => UpdateInvoiceInput) input: UpdateInvoiceInput, @Ctx() { services, rc }: GqlContext) {
    const data = defined(input);
    return services.invoices.update(rc, id, input.lineItems ? { ...data, lineItems: input.lineItems.map((l) => defined(l)) } : data);
  }

  @Mutation(() => InvoiceType, { nullable: true })
  sendInvoice(@Arg('id', () => ID) id: string, @Ctx() { services, rc, idem }: GqlContext) {
    return services.invoices.send(rc, id, idem);
  }

  @Mutation(() => InvoiceType, { nullable: true })
  payInvoice(@Arg('id', () => ID) id: string, @Arg('paymentMethod', () => String, { nullable: true }) paymentMethod: string | undefined, @Ctx() { services, rc, idem }: GqlContext) {
    return services.invoices.payWithSavedCard(rc, id, paymentMethod === undefined || paymentMethod === null ? {} : { paymentMethod }, idem);
  }

  @Mutation(() => InvoiceType, { nullable: true })
  markInvoicePaid(@Arg('id', () => ID) id: string, @Ctx() { services, rc, idem }: GqlContext) {
    return services.invoices.markPaid(rc, id, idem);
  }

  @Mutation(() => InvoiceType, { nullable: true })
  voidInvoice(@Arg('id', () => ID) id: string, @Ctx() { services, rc, idem }: GqlContext) {
    return services.invoices.void(rc, id, idem);
  }

  @FieldResolver(() => CustomerType, { nullable: true })
  customer(@Root() invoice: Invoice, @Ctx() { loaders }: GqlContext) {
    return loaders.customer.load(invoice.customerId);
  }

  @FieldResolver(() => [PaymentType], { nullable: true, description: NESTED_LIST_DESCRIPTION })
  payments(@Root() invoice: Invoice, @Args(() => NestedListArgs) args: NestedListArgs, @Ctx() { loaders }: GqlContext) {
    return loaders.paymentsByInvoice.load(invoice.id, nestedLimit(args));
  }
}

/** Customer.invoices, batched: the newest of every customer of the answer in one statement. */
@Resolver(() => CustomerType)
export class CustomerInvoicesResolver {
  @FieldResolver(() => [InvoiceType], { nullable: true, description: NESTED_LIST_DESCRIPTION })
  invoices(@Root() customer: Customer, @Args(() => NestedListArgs) args: NestedListArgs, @Ctx() { loaders }: GqlContext) {
    return loaders.invoicesByCustomer.load(customer.id, nestedLimit(args));
  }
}
