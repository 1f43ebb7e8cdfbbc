/**
 * An invalid gateway type, credential or setting. A plain error (not a DomainError) so the
 * gateways stay transport- and service-agnostic; its own file so connectors can throw it too.
 */
export class GatewayConfigError extends Error {
  constructor(
    /** `type`, `credentials.<key>` or `settings.<key>`. */
    readonly param: string,
    message: string,
    /** How the service should report it: `unknown_parameter` for unexpected keys, else invalid/missing. */
    readonly code: 'invalid_parameter' | 'missing_parameter' | 'unknown_parameter' = 'invalid_parameter',
  ) {
    super(message);
    this.name = 'GatewayConfigError';
  }
}
