import { routingConfigSchema, simulateRoutingInput } from '../src/modules/routing/routing.inputs';
import { routingDecisionSchema, routingSchema } from '../src/modules/routing/routing.schemas';
import { route } from './route-table';

export const routingRoutes = [
  route.one({
    method: 'GET', path: '/routing', operationId: 'retrieveRouting', tag: 'Routing', summary: 'The routing rules',
    permission: 'routing:read', response: routingSchema, errors: [],
    handle: (s, r) => s.routing.get(r.rc),
  }),
  route.one({
    method: 'PUT', path: '/routing', operationId: 'replaceRouting', tag: 'Routing', summary: 'Replace the routing rules',
    permission: 'routing:write', body: routingConfigSchema, response: routingSchema, errors: [],
    example: { rules: [{ name: 'EUR to the EU gateway', when: { currency: ['EUR'] }, strategy: 'priority', gateways: [{ gatewayId: 'gw_4f9Kq2mB8xZt1n' }] }], fallback: [], maxAttempts: 2 },
    handle: (s, r) => s.routing.replace(r.rc, r.body),
  }),
  route.one({
    method: 'POST', path: '/routing/simulate', operationId: 'simulateRouting', tag: 'Routing', summary: 'Which gateways a payment would be tried on',
    permission: 'routing:read', body: simulateRoutingInput, response: routingDecisionSchema, errors: [],
    example: { amount: 2500, currency: 'EUR', country: 'DE', cardBrand: 'visa' },
    handle: (s, r) => s.routing.simulate(r.rc, r.body),
  }),
];
