import type { Gateway, GatewayResult } from '../../connectors/connector';
import type { Metrics } from '../../observability/metrics';

type Operation = 'charge' | 'capture' | 'cancel' | 'refund' | 'status' | 'saveCard';

const OPERATION_LABEL: Record<Operation, string> = {
  charge: 'charge', capture: 'capture', cancel: 'cancel', refund: 'refund', status: 'status', saveCard: 'save_card',
};

/**
 * A connector whose every call is timed and counted per gateway (Metrics.observeGatewayCall):
 * the outcome its answer carries, or `error` when it threw. Only the outcome is read, never the
 * request or the answer's fields.
 */
export function measuredGateway(gateway: Gateway, gatewayId: string, metrics: Metrics): Gateway {
  const measure = <R extends GatewayResult>(operation: Operation, call: () => Promise<R>): Promise<R> => {
    const started = performance.now();
    const done = (outcome: string) => metrics.observeGatewayCall(gatewayId, gateway.type, OPERATION_LABEL[operation], outcome, (performance.now() - started) / 1000);
    return call().then(
      (result) => {
        done(result.outcome);
        return result;
      },
      (err: unknown) => {
        done('error');
        throw err;
      },
    );
  };
  return {
    type: gateway.type,
    chargeReplayWindowMs: gateway.chargeReplayWindowMs,
    charge: (request) => measure('charge', () => gateway.charge(request)),
    capture: (request) => measure('capture', () => gateway.capture(request)),
    cancel: (request) => measure('cancel', () => gateway.cancel(request)),
    refund: (request) => measure('refund', () => gateway.refund(request)),
    status: (request) => measure('status', () => gateway.status(request)),
    saveCard: (request) => measure('saveCard', () => gateway.saveCard(request)),
  };
}
