import { defineMoves } from '../../core/state-machine';

export type PublicPayAttemptStatus = 'running' | 'failed';

/**
 * What moves a public pay attempt (PublicAttempts): `start` writes it before any gateway is
 * asked, `fail` keeps a decline counted. A success, or a refusal before any gateway, deletes it;
 * an outcome not known yet leaves it running. No event: the attempts are the caps' bookkeeping.
 */
export type PublicPayAttemptMove = 'start' | 'fail';

export const PUBLIC_PAY_ATTEMPT_MOVES = defineMoves<PublicPayAttemptStatus, PublicPayAttemptMove, never>({
  start: { from: [], to: 'running', by: ['customer'], event: null, stamps: null },
  fail: { from: ['running'], to: 'failed', by: ['customer'], event: null, stamps: null },
}, { object: 'public pay attempt', words: { start: 'started', fail: 'failed' } });
