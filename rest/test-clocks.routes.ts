import { advanceTestClockInput, createTestClockInput, listTestClocksInput } from '../src/modules/subscriptions/subscription.inputs';
import { testClockSchema } from '../src/modules/subscriptions/subscription.schemas';
import { route } from './route-table';

export const testClockRoutes = [
  route.one({
    method: 'POST', path: '/test-clocks', operationId: 'createTestClock', tag: 'Test clocks', summary: 'Create a test clock (test mode)',
    permission: 'test_clocks:write', idempotent: 'createTestClock', body: createTestClockInput, response: testClockSchema, errors: ['mode_mismatch'],
    example: { frozenTime: '2026-01-31T00:00:00Z', name: 'Leap-year renewals' },
    handle: (s, r) => s.testClocks.create(r.rc, r.body, r.idem),
  }),
  route.list({
    method: 'GET', path: '/test-clocks', operationId: 'listTestClocks', tag: 'Test clocks', summary: 'List test clocks (test mode)',
    permission: 'test_clocks:read', query: listTestClocksInput, response: testClockSchema, errors: ['mode_mismatch'],
    handle: (s, r) => s.testClocks.list(r.rc, r.query),
  }),
  route.one({
    method: 'GET', path: '/test-clocks/{id}', operationId: 'retrieveTestClock', tag: 'Test clocks', summary: 'Retrieve a test clock',
    permission: 'test_clocks:read', response: testClockSchema, errors: [],
    handle: (s, r) => s.testClocks.retrieve(r.rc, r.param('id')),
  }),
  route.one({
    method: 'POST', path: '/test-clocks/{id}/advance', operationId: 'advanceTestClock', tag: 'Test clocks', summary: 'Move a test clock forward, running every billing step due',
    permission: 'test_clocks:write', idempotent: 'advanceTestClock', body: advanceTestClockInput, response: testClockSchema, errors: ['invalid_state'],
    example: { frozenTime: '2026-03-01T00:00:00Z' },
    handle: (s, r) => s.testClocks.advance(r.rc, r.param('id'), r.body, r.idem),
  }),
];
