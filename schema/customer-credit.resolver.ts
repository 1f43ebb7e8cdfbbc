import { Arg, Args, ArgsType, Ctx, Field, FieldResolver, ID, Info, Mutation, ObjectType, Query, Resolver, Root, registerEnumType } from 'type-graphql';
import type { GraphQLResolveInfo } from 'graphql';
import type { GqlContext } from './context';
import { NodeInterface } from './types/node';
import { notFoundAs } from './errors';
import { Amount, DateTime, NESTED_LIST_DESCRIPTION, NestedListArgs, PageArgs, listOptions, nestedLimit, connection, ListType } from './types/common';
import { Currency } from './types/enums';
import { CustomerType } from './customer.resolver';
import { DomainError } from '../src/core/errors';
import { BALANCE_TRANSACTION_TYPES, listBalanceTransactionsInput } from '../src/modules/customers/customer-credit.inputs';
import type { CustomerRecord } from '../src/modules/customers/customer.service';

const sameNames = <T extends string>(values: readonly T[]) => Object.fromEntries(values.map((v) => [v, v])) as { [K in T]: K };

/** REST's `type` of a balance transaction, value for value. */
export const BalanceTransactionKind = sameNames(BALANCE_TRANSACTION_TYPES);
registerEnumType(BalanceTransactionKind, {
  name: 'BalanceTransactionType',
  valuesConfig: {
    invoice_credit: { description: 'The rest of a negative invoice total, kept as credit.' },
    applied_to_invoice: { description: 'Credit an invoice took (its creditApplied).' },
    adjustment: { description: 'Credit added or taken away by hand (adjustCustomerBalance).' },
  },
});
/** The `sortField` values REST's balance transaction list takes. */
export const BalanceTransactionSortField = sameNames(listBalanceTransactionsInput.shape.sortField.unwrap().options);
registerEnumType(BalanceTransactionSortField, { name: 'BalanceTransactionSortField' });

@ObjectType('CreditBalance', { description: 'The credit a customer holds in one currency.' })
export class CreditBalanceType {
  @Field(() => Currency, { description: 'ISO 4217, upper case.' }) currency!: string;
  @Field(() => Amount, { description: 'Minor units, above 0.' }) amount!: number;
}

@ObjectType('BalanceTransaction', { implements: NodeInterface, description: "One change of a customer's credit balance (GET /v1/customers/{id}/balance-transactions)." })
export class BalanceTransactionType {
  @Field(() => ID) id!: string;
  @Field(() => String) object!: string;
  @Field(() => Boolean) livemode!: boolean;
  @Field(() => String) customerId!: string;
  @Field(() => Currency) currency!: string;
  @Field(() => Amount, { description: 'Positive adds credit, negative takes it away.' }) amount!: number;
  @Field(() => BalanceTransactionKind) type!: string;
  @Field(() => String, { nullable: true }) invoiceId!: string | null;
  @Field(() => String, { nullable: true }) description!: string | null;
  @Field(() => DateTime) createdAt!: string;
  @Field(() => DateTime) updatedAt!: string;
}

@ObjectType('BalanceTransactionList')
class BalanceTransactionList extends ListType(BalanceTransactionType, 'BalanceTransaction') {}

const BalanceTransactionPageArgs = PageArgs(BalanceTransactionSortField);

/** `Customer.balanceTransactions`: the newest `first`, or with `after` those older than that one. */
@ArgsType()
export class BalanceTransactionsArgs extends NestedListArgs {
  @Field(() => ID, { nullable: true, description: "A balance transaction of this customer (the last one of the list before): the ones older than it. Another customer's gives none." })
  after?: string | null;
}

/** `first` and `after` as the field reads them (also checked before a document's mutations run). */
export function balanceTransactionsArgs(args: BalanceTransactionsArgs): { limit: number; after: string | undefined } {
  const limit = nestedLimit(args);
  const after = args.after ?? undefined;
  if (after !== undefined && !/^cbtxn_[A-Za-z0-9]{1,60}$/.test(after)) {
    throw new DomainError('invalid_parameter', 'after must be a balance transaction id (cbtxn_…)', 'after');
  }
  return { limit, after };
}

/** The credit balance of a customer as GraphQL types it: one entry per currency, by currency. */
function creditEntries(balance: Record<string, number>): CreditBalanceType[] {
  return Object.entries(balance).sort(([a], [b]) => (a < b ? -1 : 1)).map(([currency, amount]) => ({ currency, amount }));
}

/**
 * A customer's credit (`/v1/customers/{id}/balance-transactions`), through the same service as
 * REST, and the Customer fields that read it, batched over the customers of a list.
 */
@Resolver(() => BalanceTransactionType)
export class BalanceTransactionResolver {
  @Query(() => BalanceTransactionList, { nullable: true, description: "Every change of a customer's credit balance, newest first." })
  async balanceTransactions(
    @Arg('customerId', () => ID) customerId: string,
    @Args(() => BalanceTransactionPageArgs) args: InstanceType<typeof BalanceTransactionPageArgs>,
    @Ctx() { services, rc }: GqlContext,
    @Info() info: GraphQLResolveInfo,
  ) {
    return connection(args, (input) => notFoundAs('customerId', 'customer', services.customerCredit.list(rc, customerId, input, listOptions(info))));
  }

  @Mutation(() => BalanceTransactionType, {
    nullable: true,
    description: 'Adds credit (amount > 0) or takes it away (amount < 0) by hand; a balance never goes below 0 (insufficient_credit). Records customer.updated.',
  })
  adjustCustomerBalance(
    @Arg('customerId', () => ID) customerId: string,
    @Arg('currency', () => String) currency: string,
    @Arg('amount', () => Amount) amount: number,
    @Arg('description', () => String) description: string,
    @Ctx() { services, rc, idem }: GqlContext,
  ) {
    return notFoundAs('customerId', 'customer', services.customerCredit.adjust(rc, customerId, { currency, amount, description }, idem));
  }
}

@Resolver(() => CustomerType)
export class CustomerCreditResolver {
  /** The balances the customer object carries (REST's shape), or read with the others of the list in one statement. */
  @FieldResolver(() => [CreditBalanceType], { description: 'The credit the customer holds, one entry per currency (none: empty). Invoices take it first.' })
  async creditBalance(@Root() customer: CustomerRecord & { creditBalance?: Record<string, number> }, @Ctx() { loaders }: GqlContext): Promise<CreditBalanceType[]> {
    return creditEntries(customer.creditBalance ?? (await loaders.creditBalance.load(customer.id)) ?? {});
  }

  /** Newest first, as the REST list; batched over the customers of a list. */
  @FieldResolver(() => [BalanceTransactionType], { nullable: true, description: NESTED_LIST_DESCRIPTION })
  balanceTransactions(@Root() customer: CustomerRecord, @Args(() => BalanceTransactionsArgs) args: BalanceTransactionsArgs, @Ctx() { loaders }: GqlContext) {
    const { limit, after } = balanceTransactionsArgs(args);
    return loaders.balanceTransactionsByCustomer.load(customer.id, limit, after);
  }
}
