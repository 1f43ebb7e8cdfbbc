import {
  GraphQLError,
  Kind,
  getNamedType,
  getNullableType,
  isInterfaceType,
  isListType,
  isObjectType,
  type ASTVisitor,
  type GraphQLNamedType,
  type SelectionSetNode,
  type ValidationContext,
  type ValueNode,
} from 'graphql';
import { NESTED_LIST_LIMIT } from '../src/db/list';

/** Page sizes of the list queries (API.md): 20 unless `pageSize` says otherwise, at most 100. */
const DEFAULT_PAGE_SIZE = 20;
const MAX_PAGE_SIZE = 100;
/** Nested lists (`Customer.payments`, `Payment.refunds`, `Product.prices`, …) hold at most this many. */
const NESTED_LIST_SIZE = NESTED_LIST_LIMIT;

function pageSizeOf(value: ValueNode | undefined): number {
  if (!value) return DEFAULT_PAGE_SIZE;
  if (value.kind === Kind.INT) return Math.min(MAX_PAGE_SIZE, Math.max(1, Number(value.value)));
  return MAX_PAGE_SIZE; // a variable: the largest it may be
}

/**
 * Bounds how many fields a query can make the server resolve, counting list sizes: the depth and
 * cost limits count each field once, so nested lists (customers → payments → customer →
 * payments …) or many aliases could ask for millions of objects within them. Every field counts
 * as many times as the lists above it can repeat it: a list query's page size, 100 for a nested
 * list. Fragments are counted where they are spread.
 */
export function resultSizeRule(maxFields: number, onReject: (context: ValidationContext, error: GraphQLError) => void) {
  return (context: ValidationContext): ASTVisitor => {
    const schema = context.getSchema();

    const count = (selectionSet: SelectionSetNode, parent: GraphQLNamedType, multiplier: number, spread: ReadonlySet<string>): number => {
      let total = 0;
      for (const selection of selectionSet.selections) {
        if (total > maxFields) return total;
        if (selection.kind === Kind.FIELD) {
          const fields = isObjectType(parent) || isInterfaceType(parent) ? parent.getFields() : undefined;
          const def = fields?.[selection.name.value];
          if (!def) {
            total += multiplier;
            continue;
          }
          let times = multiplier;
          if (def.args.some((a) => a.name === 'pageSize')) {
            times *= pageSizeOf(selection.arguments?.find((a) => a.name.value === 'pageSize')?.value);
          } else if (isListType(getNullableType(def.type)) && !(selection.name.value === 'nodes' && parent.name.endsWith('List'))) {
            // A list page's `nodes` are already counted by its query's page size.
            times *= NESTED_LIST_SIZE;
          }
          total += times;
          if (selection.selectionSet) total += count(selection.selectionSet, getNamedType(def.type), times, spread);
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          const on = selection.typeCondition ? schema.getType(selection.typeCondition.name.value) ?? parent : parent;
          total += count(selection.selectionSet, on, multiplier, spread);
        } else {
          const name = selection.name.value;
          const fragment = context.getFragment(name);
          if (!fragment || spread.has(name)) continue; // unknown or cyclic: other rules report it
          const on = schema.getType(fragment.typeCondition.name.value) ?? parent;
          total += count(fragment.selectionSet, on, multiplier, new Set([...spread, name]));
        }
      }
      return total;
    };

    return {
      OperationDefinition(node) {
        const root = node.operation === 'query' ? schema.getQueryType() : node.operation === 'mutation' ? schema.getMutationType() : schema.getSubscriptionType();
        if (!root) return;
        const fields = count(node.selectionSet, root, 1, new Set());
        if (fields > maxFields) {
          onReject(context, new GraphQLError(`the query could resolve more than ${maxFields} fields (list sizes included); ask for fewer nested lists or smaller pages`));
        }
      },
    };
  };
}
