import {
  GraphQLError,
  Kind,
  getArgumentValues,
  getNamedType,
  isObjectType,
  type ASTVisitor,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLNamedType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
} from 'graphql';
import { isDomainError } from '../src/core/errors';
import { parseInput } from '../src/core/validation';
import { listAttemptsInput } from '../src/modules/webhooks/webhook.inputs';
import { included, mutationCount } from './operation-fields';
import { defined, nestedLimit } from './types/common';
import { balanceTransactionsArgs } from './customer-credit.resolver';

/**
 * What each field below the root does with its arguments before reading anything, by schema
 * coordinate: the same function its resolver (or the service it calls) applies, so a document
 * can be refused for them before any of its mutations runs.
 */
const ARGUMENT_CHECKS: Record<string, (args: Record<string, unknown>) => unknown> = {
  'Customer.payments': nestedLimit,
  'Customer.invoices': nestedLimit,
  'Invoice.payments': nestedLimit,
  'Customer.subscriptions': nestedLimit,
  'BillingSubscription.invoices': nestedLimit,
  'Customer.paymentMethods': nestedLimit,
  'Customer.balanceTransactions': balanceTransactionsArgs,
  'Payment.refunds': nestedLimit,
  'Payment.gatewayTransactions': nestedLimit,
  'Product.prices': nestedLimit,
  'WebhookEndpoint.deliveries': (args) => parseInput(listAttemptsInput, defined(args)),
  'BillingSubscription.payments': nestedLimit,
  'BillingSubscription.gatewayTransactions': nestedLimit,
  'Event.deliveries': nestedLimit,
};

/**
 * Refuses to build a schema where a field below the root takes arguments that ARGUMENT_CHECKS
 * does not check: a mutation could otherwise run and then lose its answer to that argument.
 */
export function assertArgumentsChecked(schema: GraphQLSchema): void {
  const roots = new Set([schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()]);
  const unchecked: string[] = [];
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || roots.has(type) || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) {
      if (field.args.length > 0 && !ARGUMENT_CHECKS[`${type.name}.${field.name}`]) unchecked.push(`${type.name}.${field.name}`);
    }
  }
  if (unchecked.length) throw new Error(`Fields with arguments missing from ARGUMENT_CHECKS (schema/mutation-checks.ts): ${unchecked.join(', ')}`);
}

export function fragmentsOf(document: DocumentNode): Record<string, FragmentDefinitionNode> {
  const fragments: Record<string, FragmentDefinitionNode> = {};
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments[d.name.value] = d;
  return fragments;
}

/**
 * Checks the arguments of every field a mutation operation would resolve below its mutations
 * (`createPayment { refunds(first: 0) { id } }`), fragments included, with the checks their
 * resolvers apply, before any mutation runs: otherwise the mutation would charge and its answer
 * turn to null over a nested argument, hiding the charge. `variables` are the coerced values.
 * Throws the check's error (a GraphQLError wrapping the DomainError, at the field). Each field
 * and fragment is looked at once, so the work is the size of the document.
 */
export function checkMutationArguments(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  fragments: Record<string, FragmentDefinitionNode>,
  variables: Record<string, unknown>,
): void {
  const root = schema.getMutationType();
  if (operation.operation !== 'mutation' || !root) return;
  const seenFragments = new Set<string>();
  const walk = (selectionSet: SelectionSetNode, parent: GraphQLNamedType | undefined) => {
    for (const selection of selectionSet.selections) {
      if (!included(selection, variables)) continue;
      if (selection.kind === Kind.FIELD) {
        const def = isObjectType(parent) ? parent.getFields()[selection.name.value] : undefined;
        if (!def) continue; // __typename, or unknown (validation reports it)
        const check = parent !== root && def.args.length > 0 ? ARGUMENT_CHECKS[`${parent!.name}.${def.name}`] : undefined;
        if (check) checkField(check, def, selection, variables);
        if (selection.selectionSet) walk(selection.selectionSet, getNamedType(def.type));
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        walk(selection.selectionSet, selection.typeCondition ? schema.getType(selection.typeCondition.name.value) ?? undefined : parent);
      } else {
        const fragment = fragments[selection.name.value];
        if (!fragment || seenFragments.has(fragment.name.value)) continue;
        seenFragments.add(fragment.name.value);
        walk(fragment.selectionSet, schema.getType(fragment.typeCondition.name.value) ?? undefined);
      }
    }
  };
  walk(operation.selectionSet, root);
}

function checkField(
  check: (args: Record<string, unknown>) => unknown,
  def: Parameters<typeof getArgumentValues>[0],
  node: FieldNode,
  variables: Record<string, unknown>,
): void {
  let args: Record<string, unknown>;
  try {
    args = getArgumentValues(def, node, variables);
  } catch {
    return; // a value the type refuses: execution reports it as it always has
  }
  try {
    check(args);
  } catch (err) {
    if (!isDomainError(err)) throw err;
    throw new GraphQLError(err.message, { nodes: [node], originalError: err });
  }
}

/**
 * Refuses a document with more than `max` mutations in one operation, fragments expanded
 * (every field written counts, @skip or not): each one is a write, often a charge.
 */
export function maxMutationsRule(max: number, onReject: (context: ValidationContext, error: GraphQLError) => void) {
  return (context: ValidationContext): ASTVisitor => ({
    OperationDefinition(node) {
      const root = context.getSchema().getMutationType();
      if (node.operation !== 'mutation' || !root) return;
      const count = mutationCount(root, node, (name) => context.getFragment(name));
      if (count > max) {
        onReject(context, new GraphQLError(`the document holds ${count} mutations, more than ${max}; send them in several requests`, { nodes: [node] }));
      }
    },
  });
}
