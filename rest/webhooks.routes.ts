import type { Router } from '@koa/router';
import type { Services } from '../src/services';

export function webhookRoutes(router: Router, s: Services): void {
  void router;
  void s;
}
