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
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLObjectType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
  type ValueNode,
} from 'graphql';
import { included } from './operation-fields';
import { NODE_TYPES, nodePrefix, type NodePrefix } from './types/node';
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

/** The arguments that size a list: a list query's `pageSize`, a nested list's (or a Relay connection's) `first`/`last`. */
const SIZE_ARGUMENTS = new Set(['first', 'last', 'pageSize']);

/**
 * A size argument's value as the rule counts it: a literal as written (within 1..max); a variable,
 * before its value is known, as the largest it may be, and once known (`variables`, coerced) as
 * its value; absent or null, the field's default.
 */
function sizeOf(value: ValueNode | undefined, absent: number, max: number, variables?: Record<string, unknown>): number {
  if (!value || value.kind === Kind.NULL) return absent;
  if (value.kind === Kind.INT) return Math.min(max, Math.max(1, Number(value.value)));
  if (value.kind === Kind.VARIABLE && variables) {
    const given = variables[value.name.value];
    if (given === undefined || given === null) return absent;
    if (typeof given === 'number' && Number.isFinite(given)) return Math.min(max, Math.max(1, Math.trunc(given)));
  }
  return max;
}

const isPaged = (def: GraphQLField<unknown, unknown>) => def.args.some((a) => a.name === 'pageSize');

/** A connection: a list field sized by an argument (a list query, a nested list, a Relay connection). */
const isConnection = (def: GraphQLField<unknown, unknown>) => def.args.some((a) => SIZE_ARGUMENTS.has(a.name));

/** The object types `node(id:)` reads, and the links to them (Node). */
const NODE_TYPE_NAMES = new Set<string>([...Object.values(NODE_TYPES), 'Node']);

/**
 * A link: a field of an object that names another object by id, read by the request's loader for
 * that type (`Refund.payment`, `Invoice.subscription`, a customer's `defaultPaymentMethod`), one
 * statement for every parent and alias that asks for it at the same place of the document.
 */
const isLink = (def: GraphQLField<unknown, unknown>) => NODE_TYPE_NAMES.has(getNamedType(def.type).name);

/** Node types read with more than one statement (an invoice with its lines, a subscription with its items). */
const NODE_STATEMENTS: Partial<Record<NodePrefix, number>> = { in: 2, sub: 2 };
const MAX_NODE_STATEMENTS = 2;

/**
 * The node types `node(id:)`/`nodes(ids:)` may read: those of the ids written in the document or
 * given in its variables, and how many ids are not known yet (a variable at validation; a list of
 * them counts as every type).
 */
function nodeTypesAsked(selection: FieldNode, variables?: Record<string, unknown>): { types: NodePrefix[]; unknown: number } {
  const argument = (selection.arguments ?? []).find((a) => a.name.value === 'id' || a.name.value === 'ids');
  const ids: string[] = [];
  let unknown = 0;
  const collect = (value: ValueNode | undefined): void => {
    if (!value) return;
    if (value.kind === Kind.STRING) ids.push(value.value);
    else if (value.kind === Kind.LIST) value.values.forEach(collect);
    else if (value.kind === Kind.VARIABLE) {
      const given = variables?.[value.name.value];
      if (given === undefined) unknown += selection.name.value === 'nodes' && argument?.value === value ? Infinity : 1;
      else for (const id of Array.isArray(given) ? given : [given]) if (typeof id === 'string') ids.push(id);
    }
  };
  collect(argument?.value);
  return { types: [...new Set(ids.map(nodePrefix).filter((p): p is NodePrefix => p !== null))], unknown };
}

/** A list page's `nodes` (or a connection's `edges`): already counted by the page size of the field that holds them. */
const isPageItems = (name: string, parent: GraphQLNamedType) => (name === 'nodes' || name === 'edges') && (parent.name.endsWith('List') || parent.name.endsWith('Connection'));

/** How many times a list field repeats what it selects, read from its size arguments (the largest given). */
function listSize(def: GraphQLField<unknown, unknown>, selection: FieldNode, parent: GraphQLNamedType, variables?: Record<string, unknown>): number {
  if (isConnection(def)) {
    const paged = isPaged(def);
    const max = paged ? PAGE_SIZE_MAX : NESTED_LIST_SIZE;
    const first = def.args.find((a) => a.name === 'first');
    const absent = paged ? PAGE_SIZE_DEFAULT : typeof first?.defaultValue === 'number' ? first.defaultValue : NESTED_LIST_SIZE;
    const given = (selection.arguments ?? []).filter((a) => SIZE_ARGUMENTS.has(a.name.value) && a.value.kind !== Kind.NULL);
    if (given.length === 0) return absent;
    return Math.max(...given.map((a) => sizeOf(a.value, absent, max, variables)));
  }
  // A list page's `nodes` are already counted by its query's page size.
  if (isListType(getNullableType(def.type)) && !isPageItems(selection.name.value, parent)) {
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

/** A fragment of the document by name (validation's, or the document's own once it is valid). */
type FragmentLookup = (name: string) => FragmentDefinitionNode | null | undefined;

/** What an operation can make the server do (measureOperation). */
export interface OperationMeasure {
  /** Fields it can resolve, list sizes counted (stops counting once past `maxFields`). */
  fields: number;
  /** Database statements it can run. */
  statements: number;
  /** Objects its connections can return: each connection's size, multiplied by the sizes of the lists above it. */
  objects: number;
  /** Where the fields are charged (the costliest is named on a refusal). */
  charges: Map<string, Charge>;
  /** Where the statements first passed `maxStatements`. */
  past?: { path: string; node: FieldNode };
  /** The links counted (by their place in the document, aliases aside) and the node types `node`/`nodes` read: each counted once. */
  links: Set<string>;
  nodeTypes: Set<NodePrefix>;
}

/**
 * Walks one operation over the schema and counts, in one pass, the three measures of
 * OperationMeasure. Without `variables` every size given by a variable counts as its largest and
 * every `@skip`/`@include` as included (validation, before values are known); with them (coerced),
 * as at execution (the rate cost).
 */
export function measureOperation(
  schema: GraphQLSchema, fragment: FragmentLookup, operation: OperationDefinitionNode,
  options: { maxFields: number; maxStatements: number; variables?: Record<string, unknown> },
): OperationMeasure {
  const { maxFields, maxStatements, variables } = options;
  const root = operation.operation === 'query' ? schema.getQueryType() : operation.operation === 'mutation' ? schema.getMutationType() : schema.getSubscriptionType();
  const measure: OperationMeasure = { fields: 0, statements: 0, objects: 0, charges: new Map(), links: new Set(), nodeTypes: new Set() };
  if (!root) return measure;
  const mutation = operation.operation === 'mutation';

  /** Whether a list page's selection asks for `total` (which costs a COUNT), fragments included. */
  const selectsTotal = (selectionSet: SelectionSetNode | undefined, spread: ReadonlySet<string> = new Set()): boolean =>
    (selectionSet?.selections ?? []).some((s) => {
      if (!included(s, variables)) return false;
      if (s.kind === Kind.FIELD) return s.name.value === 'total';
      if (s.kind === Kind.INLINE_FRAGMENT) return selectsTotal(s.selectionSet, spread);
      const definition = fragment(s.name.value);
      return !!definition && !spread.has(s.name.value) && selectsTotal(definition.selectionSet, new Set([...spread, s.name.value]));
    });

  const statementsOf = (def: GraphQLField<unknown, unknown>, selection: FieldNode, atRoot: boolean, place: string): number => {
    const counted = isObjectType(getNamedType(def.type)) && 'total' in (getNamedType(def.type) as GraphQLObjectType).getFields() && selectsTotal(selection.selectionSet) ? 1 : 0;
    // node and nodes read one statement per type (two for some) for all of them and their
    // aliases together (NODE_LOADERS): each type they may read is counted once.
    if (atRoot && !mutation && (def.name === 'node' || def.name === 'nodes') && operation.operation === 'query') {
      const { types, unknown } = nodeTypesAsked(selection, variables);
      // An id not known yet may be of any type: the most one type takes, or every type for a list.
      const all = Object.keys(NODE_TYPES) as NodePrefix[];
      let added = 0;
      for (const type of unknown === Infinity ? all : types) {
        if (measure.nodeTypes.has(type)) continue;
        measure.nodeTypes.add(type);
        added += NODE_STATEMENTS[type] ?? 1;
      }
      return unknown === Infinity ? added : added + Math.min(unknown, all.length) * MAX_NODE_STATEMENTS;
    }
    // A mutation's own statements are bounded by the mutations per document, each a request.
    if (atRoot) return mutation ? 0 : 1 + counted;
    // A paged nested list (`deliveries`) is batched too: one statement for every parent's page,
    // one grouped COUNT when `total` is selected (pagePerParent); by cursor it pages one
    // endpoint only (WebhookStore.listAttemptsFor), with one more statement at most when the
    // page is empty (whether the cursor is in the list).
    if (isPaged(def)) return 1 + counted;
    if (isConnection(def)) return 1;
    // A link: one statement for all its parents (and aliases) at this place of the document.
    if (isLink(def) && !measure.links.has(place)) {
      measure.links.add(place);
      return 1;
    }
    return 0;
  };

  const count = (
    selectionSet: SelectionSetNode, parent: GraphQLNamedType, multiplier: number, spread: ReadonlySet<string>,
    owner: Charge | undefined, path: string, atRoot: boolean, place = '',
  ): number => {
    const { charges } = measure;
    let total = 0;
    for (const selection of selectionSet.selections) {
      if (total > maxFields) return total;
      if (!included(selection, variables)) continue;
      if (selection.kind === Kind.FIELD) {
        const name = selection.name.value;
        const fieldPath = path ? `${path}.${(selection.alias ?? selection.name).value}` : (selection.alias ?? selection.name).value;
        if (atRoot && parent === schema.getQueryType() && (name === '__schema' || name === '__type')) {
          const fields = multiplier * introspectionFields(schema, fragment, selection, maxFields - total);
          total += fields;
          charges.set(fieldPath, { path: fieldPath, node: selection, fields: (charges.get(fieldPath)?.fields ?? 0) + fields, objects: 1 });
          continue;
        }
        const fields = isObjectType(parent) || isInterfaceType(parent) ? parent.getFields() : undefined;
        const def = fields?.[name];
        const fieldPlace = place ? `${place}.${name}` : name;
        if (def) {
          measure.statements += statementsOf(def, selection, atRoot, fieldPlace);
          if (measure.statements > maxStatements && !measure.past) measure.past = { path: fieldPath, node: selection };
        }
        const times = def ? multiplier * listSize(def, selection, parent, variables) : multiplier;
        if (def && isConnection(def)) measure.objects += times;
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
          total += count(selection.selectionSet, getNamedType(def.type), times, spread, charge, fieldPath, false, fieldPlace);
        }
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const on = selection.typeCondition ? schema.getType(selection.typeCondition.name.value) ?? parent : parent;
        total += count(selection.selectionSet, on, multiplier, spread, owner, path, atRoot, place);
      } else {
        const name = selection.name.value;
        const definition = fragment(name);
        if (!definition || spread.has(name)) continue; // unknown or cyclic: other rules report it
        const on = schema.getType(definition.typeCondition.name.value) ?? parent;
        total += count(definition.selectionSet, on, multiplier, new Set([...spread, name]), owner, path, atRoot, place);
      }
    }
    return total;
  };

  measure.fields = count(operation.selectionSet, root, 1, new Set(), undefined, '', true);
  return measure;
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
 * A link to another object (`Refund.payment`) runs one for all its parents and aliases at the
 * same place of the document; `node` and `nodes` one per type they may read (two for invoices and
 * subscriptions), for all of them together.
 *
 * A refusal for fields names the costliest field: the object or list whose own fields (each
 * counted as often as it repeats) cost most, which is where a smaller `first`/`pageSize` or
 * fewer fields helps. One for statements names the field where the count passed the limit.
 */
export function resultSizeRule(limits: CostLimits, onReject: (context: ValidationContext, error: GraphQLError) => void) {
  const { maxFields, maxStatements } = limits;
  return (context: ValidationContext): ASTVisitor => ({
    OperationDefinition(node) {
      const { fields, charges, past } = measureOperation(context.getSchema(), (name) => context.getFragment(name), node, { maxFields, maxStatements });
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
          + `for its total, each nested list and each link one, node and nodes one per type); the count passes the limit at ${past.path}. `
          + 'Ask for fewer lists or aliases, or send them in several requests',
          { nodes: [past.node] },
        ));
      }
    },
  });
}

/** Objects per rate-limit point beyond the request's own (GitHub's rule: 1 per 100). */
export const OBJECTS_PER_POINT = 100;

/**
 * The rate cost of an operation (API.md §14, GitHub's rule): `base` (1 for a query or
 * subscription; for a mutation document, one per mutation, each a request) plus one point per
 * 100 objects its connections may return (`objects`, measureOperation; requested) or did return
 * (returnedObjects; actual), rounded down.
 */
export function rateCost(base: number, objects: number): number {
  return Math.max(1, base) + Math.floor(objects / OBJECTS_PER_POINT);
}

/**
 * The objects an operation's connections may return, with the sizes its variables (coerced) give:
 * each connection (a list query by `pageSize`, 20 unless given; a nested list or connection by
 * `first`/`last`, its default unless given) times the sizes of the lists above it, summed. Lists
 * held inside an object (a payment's attempts, an invoice's lines) are part of that object.
 */
export function requestedObjects(schema: GraphQLSchema, fragment: FragmentLookup, operation: OperationDefinitionNode, variables: Record<string, unknown>): number {
  return measureOperation(schema, fragment, operation, { maxFields: Infinity, maxStatements: Infinity, variables }).objects;
}

/**
 * Where an operation's result holds connections: at each level, the response keys to follow, each
 * with whether it is a connection (and the keys of its page's items) and the level below. Fields
 * with no connection at or below them are left out, so counting walks only the paths that count.
 */
interface ReturnedPlan {
  fields: Array<{ key: string; connection: boolean; pageKeys: string[]; below: ReturnedPlan | null }>;
}

/** Plans by operation, per schema: a document Apollo has seen is the same object each time it comes back. */
const returnedPlans = new WeakMap<GraphQLSchema, WeakMap<OperationDefinitionNode, ReturnedPlan | null>>();

/**
 * The objects an operation's connections did return, counted in its result `data` by the same
 * rule as requestedObjects: each connection the items it holds (a list page its `nodes`, or
 * `edges`), wherever it is repeated. The paths to count are planned once per operation (they
 * depend on the document alone); each result then only follows them, without allocating.
 */
export function returnedObjects(schema: GraphQLSchema, fragment: FragmentLookup, operation: OperationDefinitionNode, data: unknown): number {
  let plans = returnedPlans.get(schema);
  if (!plans) returnedPlans.set(schema, (plans = new WeakMap()));
  let plan = plans.get(operation);
  if (plan === undefined) {
    plan = planReturned(schema, fragment, operation);
    plans.set(operation, plan);
  }
  return plan ? countReturned(plan, data) : 0;
}

function planReturned(schema: GraphQLSchema, fragment: FragmentLookup, operation: OperationDefinitionNode): ReturnedPlan | null {
  const root = operation.operation === 'query' ? schema.getQueryType() : operation.operation === 'mutation' ? schema.getMutationType() : schema.getSubscriptionType();
  if (!root) return null;
  /** The fields of selection sets by response key, each with the type it is read on, as execution merges them. */
  const collect = (selectionSets: readonly SelectionSetNode[], parent: GraphQLNamedType) => {
    const fields = new Map<string, Array<{ node: FieldNode; on: GraphQLNamedType }>>();
    const spread = new Set<string>();
    const visit = (selectionSet: SelectionSetNode, on: GraphQLNamedType) => {
      for (const selection of selectionSet.selections) {
        if (selection.kind === Kind.FIELD) {
          const key = (selection.alias ?? selection.name).value;
          fields.set(key, [...(fields.get(key) ?? []), { node: selection, on }]);
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          visit(selection.selectionSet, selection.typeCondition ? schema.getType(selection.typeCondition.name.value) ?? on : on);
        } else if (!spread.has(selection.name.value)) {
          spread.add(selection.name.value);
          const definition = fragment(selection.name.value);
          if (definition) visit(definition.selectionSet, schema.getType(definition.typeCondition.name.value) ?? on);
        }
      }
    };
    for (const selectionSet of selectionSets) visit(selectionSet, parent);
    return fields;
  };
  const plan = (selectionSets: readonly SelectionSetNode[], parent: GraphQLNamedType): ReturnedPlan | null => {
    const fields: ReturnedPlan['fields'] = [];
    for (const [key, nodes] of collect(selectionSets, parent)) {
      const { node, on } = nodes[0];
      const def = isObjectType(on) || isInterfaceType(on) ? on.getFields()[node.name.value] : undefined;
      const inner = nodes.flatMap((n) => (n.node.selectionSet ? [n.node.selectionSet] : []));
      if (!def || inner.length === 0) continue;
      const type = getNamedType(def.type);
      const connection = isConnection(def);
      // A list page or connection counts the items of its `nodes` or `edges`, whichever holds more.
      const pageKeys = connection ? [...collect(inner, type)].filter(([, pageNodes]) => isPageItems(pageNodes[0].node.name.value, type)).map(([pageKey]) => pageKey) : [];
      const below = plan(inner, type);
      if (connection || below) fields.push({ key, connection, pageKeys, below });
    }
    return fields.length > 0 ? { fields } : null;
  };
  return plan([operation.selectionSet], root);
}

function countReturned(plan: ReturnedPlan, value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  if (Array.isArray(value)) {
    let objects = 0;
    for (const item of value) objects += countReturned(plan, item);
    return objects;
  }
  let objects = 0;
  for (const field of plan.fields) {
    const fieldValue = (value as Record<string, unknown>)[field.key];
    if (fieldValue === null || fieldValue === undefined) continue;
    if (field.connection) {
      if (Array.isArray(fieldValue)) objects += presentItems(fieldValue);
      else {
        let held = 0;
        for (const pageKey of field.pageKeys) held = Math.max(held, presentItems((fieldValue as Record<string, unknown>)[pageKey]));
        objects += held;
      }
    }
    if (field.below) objects += countReturned(field.below, fieldValue);
  }
  return objects;
}

function presentItems(value: unknown): number {
  if (!Array.isArray(value)) return 0;
  let n = 0;
  for (const v of value) if (v !== null && v !== undefined) n++;
  return n;
}

/**
 * The fields a `__schema` or `__type` selection really resolves: its selection walked over the
 * schema with graphql-js's own introspection resolvers (deprecated entries included), stopping
 * once past `budget`.
 */
function introspectionFields(schema: GraphQLSchema, fragment: FragmentLookup, selection: FieldNode, budget: number): number {
  if (!selection.selectionSet) return 1;
  if (selection.name.value === '__schema') return 1 + walkIntrospection(schema, fragment, selection.selectionSet, __Schema, schema, budget, new Set());
  const name = selection.arguments?.find((a) => a.name.value === 'name')?.value;
  // A name in a variable could be any type: counted as all of them, which bounds the largest in one pass.
  const types = name?.kind === Kind.STRING ? [schema.getType(name.value)] : Object.values(schema.getTypeMap());
  let total = 1;
  for (const type of types) {
    if (type) total += walkIntrospection(schema, fragment, selection.selectionSet, __Type, type, budget - total, new Set());
    if (total > budget) break;
  }
  return total;
}

function walkIntrospection(
  schema: GraphQLSchema, fragment: FragmentLookup, selectionSet: SelectionSetNode, type: GraphQLObjectType, source: unknown,
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
        total += walkIntrospection(schema, fragment, selection.selectionSet, itemType, item, budget - total, spread);
        if (total > budget) return total;
      }
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      total += walkIntrospection(schema, fragment, selection.selectionSet, type, source, budget - total, spread);
    } else {
      const definition = fragment(selection.name.value);
      if (!definition || spread.has(selection.name.value)) continue;
      total += walkIntrospection(schema, fragment, definition.selectionSet, type, source, budget - total, new Set([...spread, selection.name.value]));
    }
  }
  return total;
}
