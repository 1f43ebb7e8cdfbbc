import { defineMoves } from '../../core/state-machine';

export type TestClockStatus = 'ready' | 'advancing';

/**
 * A test clock's moves: made `ready`; `advancing` while one advance runs its billing steps (taken
 * from ready, or from an advance whose process died and whose lease passed); `ready` again when
 * it finishes or fails. No event: a clock is test tooling, not a resource with webhooks.
 */
export const TEST_CLOCK_MOVES = defineMoves<TestClockStatus, 'create' | 'start_advance' | 'finish_advance', never>({
  create: { from: [], to: 'ready', by: ['merchant'], event: null, stamps: null },
  start_advance: { from: ['ready', 'advancing'], to: 'advancing', by: ['merchant'], event: null, stamps: null },
  finish_advance: { from: ['advancing'], to: 'ready', by: ['merchant'], event: null, stamps: null },
}, { object: 'test clock', words: { create: 'created', start_advance: 'advanced', finish_advance: 'finished' } });
