import { ArgsType, Field, ID, Int, ObjectType, type ClassType } from 'type-graphql';
import {
  GraphQLIncludeDirective, GraphQLScalarType, GraphQLSkipDirective, Kind, getDirectiveValues,
  type GraphQLResolveInfo, type SelectionNode, type SelectionSetNode,
} from 'graphql';
import { GraphQLDateTime, GraphQLSafeInt } from 'graphql-scalars';
import { DomainError } from '../../src/core/errors';
import { NESTED_LIST_LIMIT } from '../../src/db/list';
import type { Page } from '../../src/core/pagination';
import { SortDirection } from './enums';

/** The Relay arguments of a list: `first`/`after` forwards, `last`/`before` backwards. */
export interface ConnectionArgs {
  first?: number | null;
  after?: string | null;
  last?: number | null;
  before?: string | null;
}

/**
 * Paging and sorting arguments every list query takes: page numbers (`page`, `pageSize`) or a
 * Relay connection's (`first`/`after`, `last`/`before`, whose cursors are object ids, the same
 * REST's `startingAfter`/`endingBefore` take), `sortField` the list's own enum (the fields REST
 * sorts it by), `sortDirection` asc or desc, and the created range (`updatedAfter` on lists of
 * objects that change). The service validates them as REST's query.
 */
export function PageArgs<F extends string>(sortField: Record<string, F>, options: { updatable?: boolean } = {}) {
  @ArgsType()
  class SortedPageArgs implements ConnectionArgs {
    @Field(() => Int, { nullable: true }) page?: number;
    @Field(() => Int, { nullable: true, description: 'Objects per page (1 to 100, default 20).' }) pageSize?: number;
    @Field(() => Int, { nullable: true, description: 'The first n objects (1 to 100) after `after`, or from the start.' }) first?: number | null;
    @Field(() => ID, { nullable: true, description: 'A cursor (an edge\'s, which is its object\'s id): the objects after it.' }) after?: string | null;
    @Field(() => Int, { nullable: true, description: 'The last n objects (1 to 100) before `before`, or at the end.' }) last?: number | null;
    @Field(() => ID, { nullable: true, description: 'A cursor: the objects before it.' }) before?: string | null;
    @Field(() => sortField, { nullable: true, description: 'Default createdAt.' }) sortField?: F;
    @Field(() => SortDirection, { nullable: true, description: 'Default desc.' }) sortDirection?: 'asc' | 'desc';
    @Field(() => DateTime, { nullable: true, description: 'Only objects created strictly after this instant.' }) createdAfter?: Date;
    @Field(() => DateTime, { nullable: true, description: 'Only objects created strictly before this instant.' }) createdBefore?: Date;
  }
  if (!options.updatable) return SortedPageArgs;
  @ArgsType()
  class UpdatablePageArgs extends SortedPageArgs {
    @Field(() => DateTime, { nullable: true, description: 'Only objects changed strictly after this instant.' }) updatedAfter?: Date;
  }
  return UpdatablePageArgs;
}

/**
 * Amounts in minor units reach 10^12, past GraphQL's 32-bit Int; SafeInt holds every integer up
 * to 2^53 − 1 and, unlike Float, refuses fractions.
 */
export const Amount = GraphQLSafeInt;

/**
 * graphql-scalars' DateTime, answering with the string itself: its own serialize returns a Date
 * and leaves the text to whoever stringifies the result. `toISOString` is what REST sends
 * (`2026-11-24T21:07:55.000Z`), so clients can compare the two.
 */
export const DateTime = new GraphQLScalarType({
  ...GraphQLDateTime.toConfig(),
  description: 'A UTC timestamp in ISO 8601 with milliseconds, as REST gives it: `2026-11-24T21:07:55.000Z`.',
  serialize: (value) => (GraphQLDateTime.serialize(value) as Date).toISOString(),
});

/** How many children a nested list (`Customer.payments`, `Payment.refunds`, …) gives unless `first` says. */
export const NESTED_LIST_DEFAULT = 10;
/** The most `first` may ask for. */
export const NESTED_LIST_MAX = NESTED_LIST_LIMIT;

/**
 * A nested list is nullable, as every field that can fail on its own is (the root fields too): a
 * `first` out of range or a resource the key may not read nulls that list with its error, and
 * the rest of the answer keeps its data.
 */
export const NESTED_LIST_DESCRIPTION = 'Newest first. Null, with an error, when it cannot be read (`first` out of range, no read permission).';

/** The `first` argument of every nested list; the cost limit counts the list by it. */
@ArgsType()
export class NestedListArgs {
  @Field(() => Int, {
    nullable: true,
    defaultValue: NESTED_LIST_DEFAULT,
    description: `How many of the newest (1 to ${NESTED_LIST_MAX}).`,
  })
  first?: number | null;
}

/** A nested list that pages on: `first`, and `after` (the last child of the page before). */
@ArgsType()
export class NestedCursorArgs extends NestedListArgs {
  @Field(() => ID, { nullable: true, description: 'The last object of the page before (its id, the edge cursor of the top-level list): the ones older than it. One of another parent gives those older than it in this one\'s list; an unknown id gives none.' })
  after?: string | null;
}

/** `first` as a row limit: absent or null is the default; outside 1..max is refused, as a pageSize is. */
export function nestedLimit(args: NestedListArgs): number {
  const first = args.first ?? NESTED_LIST_DEFAULT;
  if (first < 1 || first > NESTED_LIST_MAX) {
    throw new DomainError('invalid_parameter', `first must be between 1 and ${NESTED_LIST_MAX}`, 'first');
  }
  return first;
}

/** Drops arguments GraphQL left undefined so services see the same shape as REST bodies. */
export function defined<T extends object>(value: T | undefined | null): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!value) return out;
  for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = v;
  return out;
}

/**
 * A nested input as the JSON body REST would get: type-graphql hands input objects over as class
 * instances, with fields the client left out present as undefined; the service's strict schema
 * wants plain objects holding only what was sent.
 */
export function plainInput(value: object): Record<string, unknown> {
  return JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
}

/**
 * A list's arguments as REST's query: `first`/`after` are `pageSize`/`startingAfter`, `last`/`before`
 * `pageSize`/`endingBefore`; `last` alone (the end of the list) reads the list the other way round
 * from its start, and toList turns the page back. The rest goes as it is (undefined dropped).
 */
export function listInput(args: object): Record<string, unknown> {
  const { first, after, last, before, ...rest } = defined(args) as ConnectionArgs & Record<string, unknown>;
  const input: Record<string, unknown> = { ...rest };
  // `statusIn: [a, b]` is REST's `status=a,b` (a single `status` keeps its one-value type, so
  // variables declared as one value still validate).
  for (const name of ['status', 'mode', 'type']) {
    const several = input[`${name}In`];
    if (several === undefined) continue;
    if (input[name] !== undefined) throw new DomainError('invalid_parameter', `${name}In cannot be combined with ${name}`, `${name}In`);
    input[name] = several;
    delete input[`${name}In`];
  }
  const count = (name: 'first' | 'last', value: number) => {
    if (input.pageSize !== undefined) throw new DomainError('invalid_parameter', `${name} cannot be combined with pageSize`, name);
    input.pageSize = value;
  };
  if (first != null && last != null) throw new DomainError('invalid_parameter', 'first cannot be combined with last: page one way', 'last');
  if (first != null) count('first', first);
  if (last != null) count('last', last);
  if (after != null) input.startingAfter = after;
  if (before != null) input.endingBefore = before;
  if (last != null && before == null) {
    if (after != null) throw new DomainError('invalid_parameter', 'last goes with before, not after', 'last');
    input.sortDirection = input.sortDirection === 'asc' ? 'desc' : 'asc';
  }
  return input;
}

@ObjectType('PageInfo', { description: 'Where a connection\'s page lies in its list (Relay).' })
export class PageInfoType {
  @Field(() => Boolean) hasNextPage!: boolean;
  @Field(() => Boolean) hasPreviousPage!: boolean;
  @Field(() => String, { nullable: true }) startCursor!: string | null;
  @Field(() => String, { nullable: true }) endCursor!: string | null;
}

/**
 * A list type: the page (`nodes`, `total`, `page`, `pageSize`) and the same page as a Relay
 * connection (`edges` with their cursors, `pageInfo`, `totalCount`). `total` and `totalCount`
 * are the same count, made only when one of them is selected.
 */
export function ListType<T extends object>(item: ClassType<T>, name: string) {
  @ObjectType(`${name}Edge`)
  class Edge {
    @Field(() => String, { description: 'The object\'s id: give it as after or before (or REST\'s startingAfter, endingBefore).' }) cursor!: string;
    @Field(() => item) node!: T;
  }
  // Not a type of its own: each list type extends it under its own name.
  @ObjectType(`${name}ListBase`)
  abstract class List {
    @Field(() => [item]) nodes!: T[];
    @Field(() => Int) total!: number;
    @Field(() => Int, { nullable: true, description: 'The page number; null when read by a cursor.' }) page!: number | null;
    @Field(() => Int) pageSize!: number;
    @Field(() => [Edge]) edges!: Edge[];
    @Field(() => PageInfoType) pageInfo!: PageInfoType;
    @Field(() => Int, { description: 'How many objects the list holds with its filters (cursors aside); counted only when asked.' }) totalCount!: number;
  }
  return List;
}

/**
 * A list field's value: `read` gets the arguments as REST's query (listInput) and the page it
 * answers becomes the list type's value (toList). A refusal names the argument the caller gave
 * (`after`, not REST's `startingAfter`).
 */
export async function connection<T>(args: object, read: (input: Record<string, unknown>) => Promise<Page<T, number | null>>) {
  const input = listInput(args);
  let page: Page<T, number | null>;
  try {
    page = await read(input);
  } catch (err) {
    throw renamedParam(err, args as ConnectionArgs);
  }
  return toList(page, args as ConnectionArgs);
}

function renamedParam(err: unknown, args: ConnectionArgs): unknown {
  if (!(err instanceof DomainError) || err.param === undefined) return err;
  const names: Record<string, string | undefined> = {
    startingAfter: 'after',
    endingBefore: 'before',
    pageSize: args.first != null ? 'first' : args.last != null ? 'last' : undefined,
  };
  const name = names[err.param];
  if (name === undefined) return err;
  return new DomainError(err.code, err.message.replace(err.param, name), name, { cause: err.cause });
}

/** A page as a list type's value (see ListType), read with `args` (see listInput). */
export function toList<T>(p: Page<T, number | null>, args: ConnectionArgs = {}) {
  const backwards = args.before != null || (args.last != null && args.before == null);
  // `last` alone read the list from its other end: turned back into the list's order.
  const nodes = args.last != null && args.before == null ? [...p.data].reverse() : p.data;
  const cursorOf = (node: T) => (node as { id: string }).id;
  const edges = nodes.map((node) => ({ cursor: cursorOf(node), node }));
  const after = args.after != null;
  const pageInfo: PageInfoType = {
    hasNextPage: backwards ? args.before != null : p.hasMore,
    hasPreviousPage: backwards ? p.hasMore : after || (p.page !== null && p.page > 1),
    startCursor: edges[0]?.cursor ?? null,
    endCursor: edges[edges.length - 1]?.cursor ?? null,
  };
  return { nodes, total: p.total, totalCount: p.total, page: p.page, pageSize: p.pageSize, edges, pageInfo };
}

/** Whether a selection is left out by `@skip(if: true)` or `@include(if: false)`, as the executor reads them. */
function skipped(node: SelectionNode, variables: Record<string, unknown>): boolean {
  return getDirectiveValues(GraphQLSkipDirective, node, variables)?.if === true
    || getDirectiveValues(GraphQLIncludeDirective, node, variables)?.if === false;
}

/**
 * How the list field being resolved is read: its `COUNT(*)` runs only when the query selects
 * `total` (directly, under an alias, or through a fragment; not when skipped by a directive).
 */
export function listOptions(info: GraphQLResolveInfo): { countTotal: boolean } {
  const seen = new Set<string>();
  const selectsTotal = (set: SelectionSetNode): boolean => set.selections.some((selection) => {
    if (skipped(selection, info.variableValues)) return false;
    if (selection.kind === Kind.FIELD) return selection.name.value === 'total' || selection.name.value === 'totalCount';
    if (selection.kind === Kind.INLINE_FRAGMENT) return selectsTotal(selection.selectionSet);
    // A list type has no subtypes, so every fragment valid here applies to it.
    const name = selection.name.value;
    const fragment = info.fragments[name];
    if (!fragment || seen.has(name)) return false;
    seen.add(name);
    return selectsTotal(fragment.selectionSet);
  });
  return { countTotal: info.fieldNodes.some((node) => node.selectionSet !== undefined && selectsTotal(node.selectionSet)) };
}
