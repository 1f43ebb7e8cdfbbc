import { ArgsType, Field, Int } from 'type-graphql';
import {
  GraphQLIncludeDirective, GraphQLScalarType, GraphQLSkipDirective, Kind, getDirectiveValues,
  type GraphQLResolveInfo, type SelectionNode, type SelectionSetNode,
} from 'graphql';
import { GraphQLDateTime, GraphQLSafeInt } from 'graphql-scalars';
import { DomainError } from '../../src/core/errors';
import { NESTED_LIST_LIMIT } from '../../src/db/list';
import type { Page } from '../../src/core/pagination';
import { SortDirection } from './enums';

/**
 * Paging and sorting arguments every list query takes: `sortField` is the list's own enum (the
 * fields REST sorts it by), `sortDirection` asc or desc. The service validates the page numbers.
 */
export function PageArgs<F extends string>(sortField: Record<string, F>) {
  @ArgsType()
  class SortedPageArgs {
    @Field(() => Int, { nullable: true }) page?: number;
    @Field(() => Int, { nullable: true, description: 'Objects per page (1 to 100, default 20).' }) pageSize?: number;
    @Field(() => sortField, { nullable: true, description: 'Default createdAt.' }) sortField?: F;
    @Field(() => SortDirection, { nullable: true, description: 'Default desc.' }) sortDirection?: 'asc' | 'desc';
  }
  return SortedPageArgs;
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

export const toList = <T>(p: Page<T, number | null>) => ({
  nodes: p.data,
  total: p.total,
  page: p.page,
  pageSize: p.pageSize,
});

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
    if (selection.kind === Kind.FIELD) return selection.name.value === 'total';
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
