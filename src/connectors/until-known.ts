import type { GatewayResult, StatusResult } from './connector';
import { elapsedMs } from './redaction';

/** One gateway call made while learning an operation's outcome, for the gateway transaction log. */
export type KnownCall = { kind: 'operation'; result: GatewayResult } | { kind: 'status'; result: StatusResult };

export interface Learned {
  /**
   * `succeeded` or `declined` (final), or `retryable_error` when the gateway certainly did
   * nothing; when `known` is false, a `timeout` result: the operation may have happened.
   * Its `latencyMs` is the wall time of every call made here, not of the last one only.
   */
  result: GatewayResult;
  known: boolean;
}

/** A charge waiting for 3-D Secure is a final answer too: nothing else happens until the customer answers. */
const isFinal = (r: GatewayResult) => r.outcome === 'succeeded' || r.outcome === 'declined' || r.outcome === 'requires_action';

/**
 * Runs a money-moving operation (a charge, a refund) and learns what happened before anyone acts
 * on it. Only a first answer of `retryable_error` means nothing happened; after a timeout, an
 * error on the repeat says nothing about the first call, which may have moved money.
 *
 * 1. The operation. A final answer or a retryable error is known.
 * 2. After a timeout, the same operation with the same idempotency key: the gateway answers
 *    with the first call's outcome and never performs it twice. A final answer is known.
 * 3. Otherwise the status lookup. An operation it found final is known; one it found failed
 *    without effect (found, `retryable_error`) is known as a retryable error; anything else,
 *    "not found" included (search indexes lag), stays unknown.
 */
export async function untilKnown(
  operation: () => Promise<GatewayResult>,
  lookup: () => Promise<StatusResult>,
  record: (call: KnownCall) => void,
): Promise<Learned> {
  // The attempt's latency is its wall time: after a 10 s timeout a quick repeat's answer must
  // not report the repeat's few milliseconds as the attempt's.
  const started = performance.now();
  const learned = (result: GatewayResult, known: boolean): Learned => ({ result: { ...result, latencyMs: elapsedMs(started) }, known });
  const first = await operation();
  record({ kind: 'operation', result: first });
  if (first.outcome !== 'timeout') return learned(first, true);
  const repeat = await operation();
  record({ kind: 'operation', result: repeat });
  if (isFinal(repeat)) return learned(repeat, true);
  const status = await lookup();
  record({ kind: 'status', result: status });
  if (status.found && (isFinal(status) || status.outcome === 'retryable_error')) return learned(status, true);
  return learned(first, false);
}
