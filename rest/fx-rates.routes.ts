import { putRatesInput } from '../src/modules/fx/fx.inputs';
import { fxRateSetSchema } from '../src/modules/fx/fx.schemas';
import { route } from './route-table';

export const fxRateRoutes = [
  route.one({
    method: 'GET', path: '/fx-rates', operationId: 'listFxRates', tag: 'FX rates', summary: "The account's exchange rates",
    permission: 'fx_rates:read', response: fxRateSetSchema, errors: [],
    handle: (s, r) => s.fx.list(r.rc),
  }),
  route.one({
    method: 'PUT', path: '/fx-rates', operationId: 'replaceFxRates', tag: 'FX rates', summary: "Replace the account's exchange rates",
    permission: 'fx_rates:write', body: putRatesInput, response: fxRateSetSchema, errors: [],
    example: { rates: [{ from: 'USD', to: 'EUR', rate: '0.92' }] },
    handle: (s, r) => s.fx.replace(r.rc, r.body),
  }),
];
