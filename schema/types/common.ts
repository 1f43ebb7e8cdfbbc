import { ArgsType, Field, Int } from 'type-graphql';

/** Paging and sorting arguments every list query takes; the service validates them. */
@ArgsType()
export class PageArgs {
  @Field(() => Int, { nullable: true }) page?: number;
  @Field(() => Int, { nullable: true }) pageSize?: number;
  @Field(() => String, { nullable: true }) sortField?: string;
  @Field(() => String, { nullable: true }) sortDirection?: string;
}

/** Drops arguments GraphQL left undefined so services see the same shape as REST bodies. */
export function defined<T extends object>(value: T | undefined | null): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!value) return out;
  for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = v;
  return out;
}

export const toList = <T>(p: { data: T[]; total: number; page: number; pageSize: number }) => ({
  nodes: p.data,
  total: p.total,
  page: p.page,
  pageSize: p.pageSize,
});
