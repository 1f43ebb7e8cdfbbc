import { Arg, Args, ArgsType, Ctx, Field, Float, ID, Info, InputType, Int, Mutation, ObjectType, Query, Resolver, registerEnumType } from 'type-graphql';
import { GraphQLJSONObject } from 'graphql-scalars';
import type { GraphQLResolveInfo } from 'graphql';
import type { GqlContext } from './context';
import { DateTime, PageArgs, defined, listOptions, plainInput, toList } from './types/common';
import { EXPORT_FORMATS, EXPORT_RESOURCES, EXPORT_STATUSES, type ExportFormat as Format, type ExportResource as Resource } from '../src/modules/exports/export.inputs';
import type { Export } from '../src/modules/exports/export.service';

const sameNames = <T extends string>(values: readonly T[]) => Object.fromEntries(values.map((v) => [v, v])) as { [K in T]: K };

export const ExportResource = sameNames(EXPORT_RESOURCES);
export const ExportFormat = sameNames(EXPORT_FORMATS);
export const ExportStatus = sameNames(EXPORT_STATUSES);
const ExportSortField = { createdAt: 'createdAt' } as const;
registerEnumType(ExportResource, { name: 'ExportResource', description: 'The list an export writes.' });
registerEnumType(ExportFormat, { name: 'ExportFormat', description: 'csv: a header and a row per object, nested objects as JSON text; jsonl: one API object per line.' });
registerEnumType(ExportStatus, { name: 'ExportStatus' });
registerEnumType(ExportSortField, { name: 'ExportSortField' });

@ObjectType('Export', { description: 'A list written to a file in the background; the file is downloaded over REST at `url` until expiresAt.' })
export class ExportType {
  @Field(() => ID) id!: string;
  @Field(() => String) object!: string;
  @Field(() => Boolean) livemode!: boolean;
  @Field(() => ExportResource) resource!: Resource;
  @Field(() => ExportFormat) format!: Format;
  @Field(() => GraphQLJSONObject, { description: "The list's query parameters, as given." }) filters!: Record<string, unknown>;
  @Field(() => ExportStatus) status!: Export['status'];
  @Field(() => Int, { description: 'Rows written so far; once complete, the rows the file holds.' }) rowCount!: number;
  @Field(() => Float, { description: 'From 0 to 1: rows written over the rows the list held when the export started; 1 once complete.' }) progress!: number;
  @Field(() => String, { nullable: true }) failureMessage!: string | null;
  @Field(() => String, { nullable: true, description: 'GET it with a key (REST) once complete, until expiresAt.' }) url!: string | null;
  @Field(() => DateTime) expiresAt!: string;
  @Field(() => DateTime, { nullable: true }) completedAt!: string | null;
  @Field(() => DateTime) createdAt!: string;
  @Field(() => DateTime) updatedAt!: string;
}

@ObjectType('ExportList')
class ExportList {
  @Field(() => [ExportType]) nodes!: ExportType[];
  @Field(() => Int) total!: number;
  @Field(() => Int) page!: number;
  @Field(() => Int) pageSize!: number;
}

@InputType('CreateExportInput')
class CreateExportInput {
  @Field(() => ExportResource) resource!: Resource;
  @Field(() => ExportFormat) format!: Format;
  @Field(() => GraphQLJSONObject, { nullable: true, description: "The list's REST query parameters, without paging and sorting (`{status: \"succeeded\"}`)." })
  filters?: Record<string, unknown>;
}

@ArgsType()
class ExportListArgs extends PageArgs(ExportSortField) {
  @Field(() => ExportStatus, { nullable: true }) status?: Export['status'];
  @Field(() => ExportResource, { nullable: true }) resource?: Resource;
}

@Resolver(() => ExportType)
export class ExportResolver {
  @Query(() => ExportType, { name: 'export', nullable: true })
  exportById(@Arg('id', () => ID) id: string, @Ctx() { services, rc }: GqlContext) {
    return services.exports.retrieve(rc, id);
  }

  @Query(() => ExportList, { nullable: true })
  async exports(@Args(() => ExportListArgs) args: ExportListArgs, @Ctx() { services, rc }: GqlContext, @Info() info: GraphQLResolveInfo) {
    return toList(await services.exports.list(rc, defined(args), listOptions(info)));
  }

  @Mutation(() => ExportType, { nullable: true })
  createExport(@Arg('input', () => CreateExportInput) input: CreateExportInput, @Ctx() { services, rc, idem }: GqlContext) {
    return services.exports.create(rc, plainInput(input), idem);
  }
}
