import {
  GraphQLError,
  Kind,
  __Schema,
  __Type,
  getNamedType,
  getNullableType,
  isInterfaceType,
  isListType,
  isObjectType,
  type ASTVisitor,
  type FieldNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLObjectType,
  type GraphQLSchema,
  type SelectionSetNode,
  type ValidationContext,
  type ValueNode,
} from 'graphql';
import { NESTED_LIST_LIMIT } from '../src/db/list';
import { MAX_LINE_ITEMS } from '../src/modules/invoices/invoice.inputs';
import { PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX } from '../src/core/pagination';
import { MAX_ATTEMPT_ENTRIES } from '../src/modules/payments/payment-charging';
import { DASHBOARD_MINUTES } from '../src/modules/dashboard/dashboard.service';

/** The most a nested list gives (`first` at most this); also the size of a list field without an argument. */
const NESTED_LIST_SIZE = NESTED_LIST_LIMIT;

/** Lists held inside their object, whose real bound is known and smaller than NESTED_LIST_SIZE. */
const BOUNDED_LISTS: Record<string, number> = {
  'Payment.attempts': MAX_ATTEMPT_ENTRIES,
  // An invoice holds at most MAX_LINE_ITEMS lines: priced at that, not at the default 100.
  'Invoice.lineItems': MAX_LINE_ITEMS,
  // The invoice the next run creates: priced as an invoice is.
  'UpcomingInvoice.lineItems': MAX_LINE_ITEMS,
  // A credit for the old plan and a charge for the new one (prorationLines).
  'ProrationPreview.lines': 2,
  // The dashboard's chart: one entry per minute of the last hour.
  'DashboardPayments.perMinute': DASHBOARD_MINUTES,
};

/** A size argument's value as the rule counts it: a variable counts as the largest it may be. */
function sizeOf(value: ValueNode | undefined, absent: number, max: number): number {
  if (!value || value.kind === Kind.NULL) return absent;
  if (value.kind === Kind.INT) return Math.min(max, Math.max(1, Number(value.value)));
  return max;
}

const isPaged = (def: GraphQLField<unknown, unknown>) => def.args.some((a) => a.name === 'pageSize');

/** How many times a list field repeats what it selects, read from its size argument. */
function listSize(def: GraphQLField<unknown, unknown>, selection: FieldNode, parent: GraphQLNamedType): number {
  const argument = (name: string) => selection.arguments?.find((a) => a.name.value === name)?.value;
  if (isPaged(def)) return sizeOf(argument('pageSize'), PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX);
  const first = def.args.find((a) => a.name === 'first');
  if (first) return sizeOf(argument('first'), typeof first.defaultValue === 'number' ? first.defaultValue : NESTED_LIST_SIZE, NESTED_LIST_SIZE);
  // A list page's `nodes` are already counted by its query's page size.
  if (isListType(getNullableType(def.type)) && !(selection.name.value === 'nodes' && parent.name.endsWith('List'))) {
    return BOUNDED_LISTS[`${parent.name}.${def.name}`] ?? NESTED_LIST_SIZE;
  }
  return 1;
}

/** Where a field's count is charged: the object or list it is read from, named as the response names it. */
interface Charge { path: string; node: FieldNode; fields: number; objects: number }

const formatCount = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'unbounded');

export interface CostLimits {
  /** Fields the query can resolve, list sizes counted. */
  maxFields: number;
  /** Database statements it can run. */
  maxStatements: number;
}

/**
 * The query's cost, in two measures, each with its limit:
 *
 * Fields: how many the query can make the server resolve, counting list sizes. Every field counts
 * as many times as the lists above it can repeat it: a list query by its `pageSize` (20 unless
 * given), a nested list by its `first` (its default unless given), a variable as the largest
 * value it may take, `Payment.attempts` by the most a payment can hold, any other list as 100.
 * Introspection (`__schema`, `__type`) counts the fields it would really resolve, read from the
 * schema. Fragments count where they are spread, so aliases, fragments and nesting cannot ask for
 * more than the limit.
 *
 * Statements: the database work. Each query (or subscription) field runs one, a list query one
 * more for its `total` (mutations are bounded by their own cap, maxMutationsRule); a nested list
 * one for all its parents together (its loader batches them), and a paged nested list
 * (`WebhookEndpoint.deliveries`) one for every parent's page plus one grouped COUNT for `total`.
 * Aliases count each: 400 aliased list queries are 400 or 800 statements, however few fields.
 *
 * A refusal for fields names the costliest field: the object or list whose own fields (each
 * counted as often as it repeats) cost most, which is where a smaller `first`/`pageSize` or
 * fewer fields helps. One for statements names the field where the count passed the limit.
 */
export function resultSizeRule(limits: CostLimits, onReject: (context: ValidationContext, error: GraphQLError) => void) {
  const { maxFields, maxStatements } = limits;
  return (context: ValidationContext): ASTVisitor => {
    const schema = context.getSchema();
    /** The statements of the operation being counted, and where they first passed the limit. */
    const tally: { mutation: boolean; statements: number; past?: { path: string; node: FieldNode } } = { mutation: false, statements: 0 };

    /** Whether a list page's selection asks for `total` (which costs a COUNT), fragments included. */
    const selectsTotal = (selectionSet: SelectionSetNode | undefined, spread: ReadonlySet<string> = new Set()): boolean =>
      (selectionSet?.selections ?? []).some((s) => {
        if (s.kind === Kind.FIELD) return s.name.value === 'total';
        if (s.kind === Kind.INLINE_FRAGMENT) return selectsTotal(s.selectionSet, spread);
        const fragment = context.getFragment(s.name.value);
        return !!fragment && !spread.has(s.name.value) && selectsTotal(fragment.selectionSet, new Set([...spread, s.name.value]));
      });

    const statementsOf = (def: GraphQLField<unknown, unknown>, selection: FieldNode, atRoot: boolean): number => {
      const counted = isObjectType(getNamedType(def.type)) && 'total' in (getNamedType(def.type) as GraphQLObjectType).getFields() && selectsTotal(selection.selectionSet) ? 1 : 0;
      // A mutation's own statements are bounded by the mutations per document, each a request.
      if (atRoot) return tally.mutation ? 0 : 1 + counted;
      // A paged nested list (`deliveries`) is batched too: one statement for every parent's page,
      // one grouped COUNT when `total` is selected (pagePerParent).
      if (isPaged(def)) return 1 + counted;
      if (def.args.some((a) => a.name === 'first')) return 1;
      return 0;
    };

    const count = (
      selectionSet: SelectionSetNode, parent: GraphQLNamedType, multiplier: number, spread: ReadonlySet<string>,
      owner: Charge | undefined, path: string, charges: Map<string, Charge>, atRoot: boolean,
    ): number => {
      let total = 0;
      for (const selection of selectionSet.selections) {
        if (total > maxFields) return total;
        if (selection.kind === Kind.FIELD) {
          const name = selection.name.value;
          const fieldPath = path ? `${path}.${(selection.alias ?? selection.name).value}` : (selection.alias ?? selection.name).value;
          if (atRoot && parent === schema.getQueryType() && (name === '__schema' || name === '__type')) {
            const fields = multiplier * introspectionFields(schema, context, selection, maxFields - total);
            total += fields;
            charges.set(fieldPath, { path: fieldPath, node: selection, fields: (charges.get(fieldPath)?.fields ?? 0) + fields, objects: 1 });
            continue;
          }
          const fields = isObjectType(parent) || isInterfaceType(parent) ? parent.getFields() : undefined;
          const def = fields?.[name];
          if (def) {
            tally.statements += statementsOf(def, selection, atRoot);
            if (tally.statements > maxStatements && !tally.past) tally.past = { path: fieldPath, node: selection };
          }
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
            total += count(selection.selectionSet, getNamedType(def.type), times, spread, charge, fieldPath, charges, false);
          }
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          const on = selection.typeCondition ? schema.getType(selection.typeCondition.name.value) ?? parent : parent;
          total += count(selection.selectionSet, on, multiplier, spread, owner, path, charges, atRoot);
        } else {
          const name = selection.name.value;
          const fragment = context.getFragment(name);
          if (!fragment || spread.has(name)) continue; // unknown or cyclic: other rules report it
          const on = schema.getType(fragment.typeCondition.name.value) ?? parent;
          total += count(fragment.selectionSet, on, multiplier, new Set([...spread, name]), owner, path, charges, atRoot);
        }
      }
      return total;
    };

    return {
      OperationDefinition(node) {
        const root = node.operation === 'query' ? schema.getQueryType() : node.operation === 'mutation' ? schema.getMutationType() : schema.getSubscriptionType();
        if (!root) return;
        const charges = new Map<string, Charge>();
        tally.mutation = node.operation === 'mutation';
        tally.statements = 0;
        delete tally.past;
        const fields = count(node.selectionSet, root, 1, new Set(), undefined, '', charges, true);
        const past = tally.past as { path: string; node: FieldNode } | undefined;
        if (fields > maxFields) {
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
        } else if (past) {
          onReject(context, new GraphQLError(
            `the query could run more than ${maxStatements} database statements (each query field runs one, a list query one more `
            + `for its total, each nested list one); the count passes the limit at ${past.path}. `
            + 'Ask for fewer lists or aliases, or send them in several requests',
            { nodes: [past.node] },
          ));
        }
      },
    };
  };
}

/**
 * The fields a `__schema` or `__type` selection really resolves: its selection walked over the
 * schema with graphql-js's own introspection resolvers (deprecated entries included), stopping
 * once past `budget`.
 */
function introspectionFields(schema: GraphQLSchema, context: ValidationContext, selection: FieldNode, budget: number): number {
  if (!selection.selectionSet) return 1;
  if (selection.name.value === '__schema') return 1 + walkIntrospection(schema, context, selection.selectionSet, __Schema, schema, budget, new Set());
  const name = selection.arguments?.find((a) => a.name.value === 'name')?.value;
  // A name in a variable could be any type: counted as all of them, which bounds the largest in one pass.
  const types = name?.kind === Kind.STRING ? [schema.getType(name.value)] : Object.values(schema.getTypeMap());
  let total = 1;
  for (const type of types) {
    if (type) total += walkIntrospection(schema, context, selection.selectionSet, __Type, type, budget - total, new Set());
    if (total > budget) break;
  }
  return total;
}

function walkIntrospection(
  schema: GraphQLSchema, context: ValidationContext, selectionSet: SelectionSetNode, type: GraphQLObjectType, source: unknown,
  budget: number, spread: ReadonlySet<string>,
): number {
  let total = 0;
  for (const selection of selectionSet.selections) {
    if (total > budget) return total;
    if (selection.kind === Kind.FIELD) {
      total += 1;
      const def = type.getFields()[selection.name.value];
      if (!def || !selection.selectionSet) continue;
      const info = { schema } as Parameters<NonNullable<typeof def.resolve>>[3];
      const value = def.resolve ? def.resolve(source, { includeDeprecated: true }, undefined, info) : (source as Record<string, unknown>)[def.name];
      const items: unknown[] = Array.isArray(value) ? value : value == null ? [] : [value];
      const itemType = getNamedType(def.type) as GraphQLObjectType;
      // A list counts once per item, as other lists do.
      total += Math.max(0, items.length - 1);
      for (const item of items) {
        total += walkIntrospection(schema, context, selection.selectionSet, itemType, item, budget - total, spread);
        if (total > budget) return total;
      }
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      total += walkIntrospection(schema, context, selection.selectionSet, type, source, budget - total, spread);
    } else {
      const fragment = context.getFragment(selection.name.value);
      if (!fragment || spread.has(selection.name.value)) continue;
      total += walkIntrospection(schema, context, fragment.selectionSet, type, source, budget - total, new Set([...spread, selection.name.value]));
    }
  }
  return total;
}
