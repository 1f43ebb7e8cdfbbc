import type { Router } from '@koa/router';
import type { Services } from '../src/services';
import { body, idempotent, one, param } from './route';

export function testClockRoutes(router: Router, s: Services): void {
  const clocks = s.testClocks;
  router.post('/test-clocks', idempotent('createTestClock', (rc, ctx, idem) => clocks.create(rc, body(ctx), idem)));
  router.get('/test-clocks/:id', one((rc, ctx) => clocks.retrieve(rc, param(ctx, 'id'))));
  router.post('/test-clocks/:id/advance', idempotent('advanceTestClock', (rc, ctx, idem) => clocks.advance(rc, param(ctx, 'id'), body(ctx), idem)));
}
