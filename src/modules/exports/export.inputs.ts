import { z } from 'zod';
import { listSchema } from '../../core/pagination';

export const EXPORT_RESOURCES = ['payments', 'refunds', 'customers', 'invoices', 'subscriptions', 'events'] as const;
export type ExportResource = (typeof EXPORT_RESOURCES)[number];

export const EXPORT_FORMATS = ['csv', 'jsonl'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export const EXPORT_STATUSES = ['queued', 'running', 'complete', 'failed'] as const;

/**
 * `POST /v1/exports`. `filters` is checked against the resource's own list parameters by the
 * service (ExportService.create), each problem named `filters.<name>`.
 */
export const createExportInput = z
  .object({
    resource: z.enum(EXPORT_RESOURCES, { error: `resource must be one of ${EXPORT_RESOURCES.join(', ')}` }),
    format: z.enum(EXPORT_FORMATS, { error: `format must be one of ${EXPORT_FORMATS.join(', ')}` }),
    filters: z.record(z.string(), z.unknown(), { error: 'filters must be an object of the list\'s query parameters' }).optional(),
  })
  .strict();

export const listExportsInput = listSchema(['createdAt'] as const, {
  status: z.enum(EXPORT_STATUSES, { error: `status must be one of ${EXPORT_STATUSES.join(', ')}` }).optional(),
  resource: z.enum(EXPORT_RESOURCES, { error: `resource must be one of ${EXPORT_RESOURCES.join(', ')}` }).optional(),
});
