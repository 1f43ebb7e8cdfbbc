import { GATEWAY_TYPES, GatewayConfigError, createGateway, isGatewayType, validateGatewayConfig } from '../../../src/connectors/registry';
import { SimulatorGateway } from '../../../src/connectors/simulator/simulator.gateway';
import { StripeGateway } from '../../../src/connectors/stripe/stripe.gateway';

function configError(fn: () => unknown): GatewayConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayConfigError) return err;
    throw err;
  }
  throw new Error('expected a GatewayConfigError');
}

describe('gateway registry', () => {
  it('should list the simulator and stripe types', () => {
    expect(GATEWAY_TYPES).toEqual(['simulator', 'stripe']);
    expect(isGatewayType('stripe')).toBe(true);
    expect(isGatewayType('paypal')).toBe(false);
  });

  it('should build each connector from its type', () => {
    const simulator = createGateway('simulator', { gatewayId: 'gw_1', credentials: {} });
    const stripe = createGateway('stripe', { gatewayId: 'gw_2', credentials: { secretKey: 'sk_test_abc' } });
    expect(simulator).toBeInstanceOf(SimulatorGateway);
    expect(simulator.type).toBe('simulator');
    expect(stripe).toBeInstanceOf(StripeGateway);
    expect(stripe.type).toBe('stripe');
  });

  it('should refuse an unknown type with param type', () => {
    const err = configError(() => createGateway('paypal', { gatewayId: 'gw_1', credentials: {} }));
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('GatewayConfigError');
    expect(err.param).toBe('type');
  });

  it('should require a Stripe secret key starting with sk_', () => {
    expect(configError(() => validateGatewayConfig('stripe', {}, {}))).toMatchObject({ param: 'credentials.secretKey', code: 'missing_parameter' });
    expect(configError(() => validateGatewayConfig('stripe', { secretKey: 'pk_test_abc' }, {}))).toMatchObject({ param: 'credentials.secretKey', code: 'invalid_parameter' });
    expect(configError(() => validateGatewayConfig('stripe', { secretKey: 'sk_test_abc', extra: 'x' }, {}))).toMatchObject({ param: 'credentials.extra', code: 'unknown_parameter' });
  });

  it('should need no credentials for the simulator, and keep any it is given', () => {
    expect(validateGatewayConfig('simulator', undefined, undefined)).toEqual({ type: 'simulator', credentials: {}, settings: {} });
    expect(validateGatewayConfig('simulator', { apiKey: 'x' }, {}).credentials).toEqual({ apiKey: 'x' });
  });

  it('should validate simulator settings ranges', () => {
    const ok = validateGatewayConfig('simulator', {}, { latencyMs: 10_000, outage: false, failureRate: 1, seed: 7 });
    expect(ok.settings).toEqual({ latencyMs: 10_000, outage: false, failureRate: 1, seed: 7 });
    expect(configError(() => validateGatewayConfig('simulator', {}, { latencyMs: 10_001 })).param).toBe('settings.latencyMs');
    expect(configError(() => validateGatewayConfig('simulator', {}, { latencyMs: -1 })).param).toBe('settings.latencyMs');
    expect(configError(() => validateGatewayConfig('simulator', {}, { failureRate: 1.5 })).param).toBe('settings.failureRate');
    expect(configError(() => validateGatewayConfig('simulator', {}, { outage: 'yes' })).param).toBe('settings.outage');
    expect(configError(() => validateGatewayConfig('simulator', {}, { seed: 1.5 })).param).toBe('settings.seed');
    expect(configError(() => validateGatewayConfig('simulator', {}, { latency: 5 }))).toMatchObject({ param: 'settings.latency', code: 'unknown_parameter' });
  });

  it('should default the Stripe base URL and require https', () => {
    expect(validateGatewayConfig('stripe', { secretKey: 'sk_live_x' }, {}).settings).toEqual({ baseUrl: 'https://api.stripe.com' });
    expect(configError(() => validateGatewayConfig('stripe', { secretKey: 'sk_live_x' }, { baseUrl: 'http://api.stripe.com' })).param).toBe('settings.baseUrl');
    expect(configError(() => validateGatewayConfig('stripe', { secretKey: 'sk_live_x' }, { baseUrl: 'not a url' })).param).toBe('settings.baseUrl');
  });

  it('should validate config in createGateway too', () => {
    expect(configError(() => createGateway('simulator', { gatewayId: 'gw_1', credentials: {}, settings: { failureRate: 2 } })).param).toBe('settings.failureRate');
  });
});
