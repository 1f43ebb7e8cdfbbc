import { createGatewayInput, listGatewaysInput, updateGatewayInput } from '../src/modules/gateways/gateway.inputs';
import { gatewaySchema } from '../src/modules/gateways/gateway.schemas';
import { route } from './route-table';

export const gatewayRoutes = [
  route.one({
    method: 'POST', path: '/gateways', operationId: 'createGateway', tag: 'Gateways', summary: 'Configure a gateway',
    permission: 'gateways:write', idempotent: 'createGateway', body: createGatewayInput, response: gatewaySchema, errors: [],
    example: { name: 'Simulator EU', type: 'simulator', currencies: ['EUR'], enabled: true },
    handle: (s, r) => s.gateways.create(r.rc, r.body, r.idem),
  }),
  route.list({
    method: 'GET', path: '/gateways', operationId: 'listGateways', tag: 'Gateways', summary: 'List configured gateways',
    permission: 'gateways:read', query: listGatewaysInput, response: gatewaySchema, errors: [],
    handle: (s, r) => s.gateways.list(r.rc, r.query),
  }),
  route.one({
    method: 'GET', path: '/gateways/{id}', operationId: 'retrieveGateway', tag: 'Gateways', summary: 'Retrieve a gateway',
    permission: 'gateways:read', response: gatewaySchema, errors: [],
    handle: (s, r) => s.gateways.retrieve(r.rc, r.param('id')),
  }),
  route.one({
    method: 'PATCH', path: '/gateways/{id}', operationId: 'updateGateway', tag: 'Gateways', summary: 'Update a gateway',
    permission: 'gateways:write', body: updateGatewayInput, response: gatewaySchema, errors: [],
    example: { enabled: false },
    handle: (s, r) => s.gateways.update(r.rc, r.param('id'), r.body),
  }),
  route.one({
    method: 'DELETE', path: '/gateways/{id}', operationId: 'deleteGateway', tag: 'Gateways', summary: 'Delete a gateway (refused while routing rules name it)',
    permission: 'gateways:write', response: gatewaySchema, errors: ['gateway_in_use'],
    handle: (s, r) => s.gateways.remove(r.rc, r.param('id')),
  }),
];
