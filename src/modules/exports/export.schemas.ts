import { z } from 'zod';
import { jsonObject, nullableTimestamp, objectBase, timestamp } from '../../core/api-schemas';
import { EXPORT_FORMATS, EXPORT_RESOURCES, EXPORT_STATUSES } from './export.inputs';

export const exportSchema = z
  .object({
    ...objectBase('export'),
    resource: z.enum(EXPORT_RESOURCES),
    format: z.enum(EXPORT_FORMATS),
    filters: jsonObject.meta({ description: "The list's query parameters the export was made with, as given." }),
    status: z.enum(EXPORT_STATUSES),
    rowCount: z.number().int().meta({ description: 'Rows written to the file so far; once complete, the rows it holds.' }),
    progress: z.number().min(0).max(1).meta({ description: 'From 0 to 1: rows written over the rows the list held when the export started; 1 once complete.' }),
    failureMessage: z.string().nullable(),
    url: z.string().nullable().meta({ description: 'Where the file is downloaded (GET, with a key) once complete, until expiresAt; null otherwise.' }),
    expiresAt: timestamp.meta({ description: 'When the file is deleted (24 hours after the export was asked for); its download answers 410 export_expired from then on.' }),
    completedAt: nullableTimestamp,
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Export' });

export type Export = z.output<typeof exportSchema>;
