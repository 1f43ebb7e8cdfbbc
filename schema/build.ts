import 'reflect-metadata';
import { buildSchemaSync } from 'type-graphql';
import { printSchema, type GraphQLSchema } from 'graphql';
import { CustomerResolver } from './customer.resolver';
import { PriceResolver, ProductResolver } from './catalog.resolver';
import { EventResolver } from './event.resolver';

let cached: GraphQLSchema | undefined;

export function buildPayorchSchema(): GraphQLSchema {
  cached ??= buildSchemaSync({
    resolvers: [CustomerResolver, ProductResolver, PriceResolver, EventResolver],
    validate: false,
  });
  return cached;
}

export function printPayorchSchema(): string {
  return `${printSchema(buildPayorchSchema())}\n`;
}
