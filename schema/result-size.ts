import {
  GraphQLError,
  Kind,
  getNamedType,
  getNullableType,
  isInterfaceType,
  isListType,
  isObjectType,
  type ASTVisitor,
  type FieldNode,
  type GraphQLField,
  type GraphQLNamedType,
  type SelectionSetNode,
  type ValidationContext,
  type ValueNode,
} from 'graphql';
import { NESTED_LIST_LIMIT } from '../src/db/list';

/** Page sizes of the list queries (API.md): 20 unless `pageSize` says otherwise, at most 100. */
const DEFAULT_PAGE_SIZE = 20;
const MAX_PAGE_SIZE = 100;
/** The most a nested list gives (`first` at most this); also the size of a list field without an argument. */
const NESTED_LIST_SIZE = NESTED_LIST_LIMIT;

/** A size argument's value as the rule counts it: a variable counts as the largest it may be. */
function sizeOf(value: ValueNode | undefined, absent: number, max: number): number {
  if (!value || value.kind === Kind.NULL) return absent;
  if (value.kind === Kind.INT) return Math.min(max, Math.max(1, Number(value.value)));
  return max;
}

/** How many times a list field repeats what it selects, read from its size argument. */
function listSize(def: GraphQLField<unknown, unknown>, selection: FieldNode, parent: GraphQLNamedType): number {
  const argument = (name: string) => selection.arguments?.find((a) => a.name.value === name)?.value;
  if (def.args.some((a) => a.name === 'pageSize')) return sizeOf(argument('pageSize'), DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE);
  const first = def.args.find((a) => a.name === 'first');
  if (first) return sizeOf(argument('first'), typeof first.defaultValue === 'number' ? first.defaultValue : NESTED_LIST_SIZE, NESTED_LIST_SIZE);
  // A list page's `nodes` are already counted by its query's page size.
  if (isListType(getNullableType(def.type)) && !(selection.name.value === 'nodes' && parent.name.endsWith('List'))) return NESTED_LIST_SIZE;
  return 1;
}

/** Where a field's count is charged: the object or list it is read from, named as the response names it. */
interface Charge { path: string; node: FieldNode; fields: number; objects: number }

const formatCount = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'unbounded');

/**
 * The query's cost: how many fields it can make the server resolve, counting list sizes. Every
 * field counts as many times as the lists above it can repeat it: a list query by its `pageSize`
 * (20 unless given), a nested list by its `first` (its default unless given), a variable as the
 * largest value it may take, any other list as 100. Fragments count where they are spread, so
 * aliases, fragments and nesting cannot ask for more than the limit.
 *
 * A refusal names the costliest field: the object or list whose own fields (each counted as often
 * as it repeats) cost most, which is where a smaller `first`/`pageSize` or fewer fields helps.
 */
export function resultSizeRule(maxFields: number, onReject: (context: ValidationContext, error: GraphQLError) => void) {
  return (context: ValidationContext): ASTVisitor => {
    const schema = context.getSchema();

    const count = (
      selectionSet: SelectionSetNode, parent: GraphQLNamedType, multiplier: number, spread: ReadonlySet<string>,
      owner: Charge | undefined, path: string, charges: Map<string, Charge>,
    ): number => {
      let total = 0;
      for (const selection of selectionSet.selections) {
        if (total > maxFields) return total;
        if (selection.kind === Kind.FIELD) {
          const fields = isObjectType(parent) || isInterfaceType(parent) ? parent.getFields() : undefined;
          const def = fields?.[selection.name.value];
          const fieldPath = path ? `${path}.${(selection.alias ?? selection.name).value}` : (selection.alias ?? selection.name).value;
          const times = def ? multiplier * listSize(def, selection, parent) : multiplier;
          total += times;
          let charge = owner;
          if (def && selection.selectionSet) {
            // An object or list: its own fields are charged to it (the same path spread twice adds up).
            charge = charges.get(fieldPath);
            if (!charge) {
              charge = { path: fieldPath, node: selection, fields: 0, objects: 0 };
              charges.set(fieldPath, charge);
            }
            charge.objects += times;
          }
          const target = charge ?? { path: fieldPath, node: selection, fields: 0, objects: 0 };
          if (!charge) charges.set(fieldPath, target);
          target.fields += times;
          // Past the limit on its own: what it selects only adds to a refusal already certain.
          if (def && selection.selectionSet && times <= maxFields) {
            total += count(selection.selectionSet, getNamedType(def.type), times, spread, charge, fieldPath, charges);
          }
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          const on = selection.typeCondition ? schema.getType(selection.typeCondition.name.value) ?? parent : parent;
          total += count(selection.selectionSet, on, multiplier, spread, owner, path, charges);
        } else {
          const name = selection.name.value;
          const fragment = context.getFragment(name);
          if (!fragment || spread.has(name)) continue; // unknown or cyclic: other rules report it
          const on = schema.getType(fragment.typeCondition.name.value) ?? parent;
          total += count(fragment.selectionSet, on, multiplier, new Set([...spread, name]), owner, path, charges);
        }
      }
      return total;
    };

    return {
      OperationDefinition(node) {
        const root = node.operation === 'query' ? schema.getQueryType() : node.operation === 'mutation' ? schema.getMutationType() : schema.getSubscriptionType();
        if (!root) return;
        const charges = new Map<string, Charge>();
        const fields = count(node.selectionSet, root, 1, new Set(), undefined, '', charges);
        if (fields <= maxFields) return;
        let costliest: Charge | undefined;
        for (const charge of charges.values()) if (!costliest || charge.fields > costliest.fields) costliest = charge;
        const where = costliest
          ? `; the costliest field is ${costliest.path} (${formatCount(costliest.fields)} fields${costliest.objects > 1 ? ` for up to ${formatCount(costliest.objects)} objects` : ''})`
          : '';
        onReject(context, new GraphQLError(
          `the query could resolve more than ${formatCount(maxFields)} fields (list sizes included)${where}. `
          + 'Ask for fewer fields or smaller lists: `first` on nested lists, `pageSize` on list queries',
          { nodes: costliest ? [costliest.node] : undefined },
        ));
      },
    };
  };
}
