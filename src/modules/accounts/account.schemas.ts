import { z } from 'zod';
import { nullableTimestamp, objectBase, timestamp } from '../../core/api-schemas';
import { addressOut } from '../../core/parties';

export const accountSettingsSchema = z
  .object({
    ...objectBase('account'),
    name: z.string(),
    invoicePrefix: z.string(),
    dunningRetryDays: z.array(z.number().int()),
    rateLimitPerMinute: z.number().int().nullable(),
    publicDeclinesPerHour: z.number().int().meta({ description: 'Failed public pays (hosted pages) per mode in a rolling hour, after which every public pay of that mode answers 429 too_many_attempts until the hour has passed.' }),
    address: addressOut.nullable().meta({ description: "The seller's address, printed on invoices." }),
    taxId: z.string().nullable().meta({ description: "The seller's tax id (e.g. a VAT number), printed on invoices." }),
    supportEmail: z.string().nullable().meta({ description: 'Where customers write with questions, printed on invoices.' }),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Account' });

export const apiKeySchema = z
  .object({
    ...objectBase('api_key'),
    name: z.string().nullable(),
    permissions: z.array(z.string()),
    keyHint: z.string(),
    revoked: z.boolean(),
    revokedAt: nullableTimestamp,
    createdAt: timestamp,
    updatedAt: timestamp,
    /** Present only in the response that created the key. */
    secret: z.string().optional().meta({ description: 'The key itself: only in the answer that created it.' }),
  })
  .meta({ id: 'ApiKey' });
