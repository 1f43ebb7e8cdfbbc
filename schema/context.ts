import type { RequestContext } from '../src/core/context';
import type { Services } from '../src/services';
import type { Loaders } from './loaders';

export interface GqlContext {
  rc: RequestContext;
  services: Services;
  loaders: Loaders;
}
