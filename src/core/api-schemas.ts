import { z } from 'zod';

/**
 * Building blocks of the API objects' response schemas (each module's `*.schemas.ts`): what the
 * OpenAPI document describes and the contract test checks every answer against.
 */

/** An instant as the API writes it: ISO 8601 in UTC with milliseconds. */
export const timestamp = z.iso.datetime();
export const nullableTimestamp = timestamp.nullable();
/** Metadata as stored: string values under string keys. */
export const metadataOut = z.record(z.string(), z.string());
/** An ISO 4217 code, upper case. */
export const currencyOut = z.string().regex(/^[A-Z]{3}$/);
/** An amount in the currency's minor unit. */
export const amountOut = z.number().int();
/** Any JSON object (a gateway's own request/response, an event's object). */
export const jsonObject = z.record(z.string(), z.unknown());

/** The fields every stored API object carries. */
export const objectBase = <T extends string>(object: T) => ({
  id: z.string(),
  object: z.literal(object),
  livemode: z.boolean(),
});
