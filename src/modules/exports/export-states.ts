import { defineMoves } from '../../core/state-machine';
import type { EXPORT_STATUSES } from './export.inputs';

export type ExportStatus = (typeof EXPORT_STATUSES)[number];

/**
 * What moves an export: `create` (queued), `start` (a worker claims it: from queued, or from
 * running when the claim before it died and its lease ran out), `complete` (the file is whole)
 * and `fail` (the filters no longer read, the attempts ran out, or it expired before it was done).
 * No event is written: the export is polled (`GET /v1/exports/{id}`).
 */
export type ExportMove = 'create' | 'start' | 'complete' | 'fail';

export const EXPORT_MOVES = defineMoves<ExportStatus, ExportMove, never, 'completedAt'>({
  create: { from: [], to: 'queued', by: ['merchant'], event: null, stamps: null },
  start: { from: ['queued', 'running'], to: 'running', by: ['system'], event: null, stamps: null },
  complete: { from: ['running'], to: 'complete', by: ['system'], event: null, stamps: 'completedAt' },
  fail: { from: ['queued', 'running'], to: 'failed', by: ['system'], event: null, stamps: null },
}, { object: 'export', words: { create: 'created', start: 'started', complete: 'completed', fail: 'failed' } });
