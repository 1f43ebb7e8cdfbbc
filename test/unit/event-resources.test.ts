import { PERMISSION_RESOURCES } from '../../src/core/context';
import { EVENT_TYPES, eventResource, readableEventTypes } from '../../src/modules/events/event.service';

describe('the resource of each event type', () => {
  it('should name a permission resource for every event type, so no type is readable by full keys only by accident', () => {
    for (const type of EVENT_TYPES) expect([type, (PERMISSION_RESOURCES as readonly string[]).includes(eventResource(type) ?? '')]).toEqual([type, true]);
    expect(eventResource('checkout.session.completed')).toBe('checkout_sessions');
    expect(eventResource('payment_link.created')).toBe('payment_links');
    expect(eventResource('payment.succeeded')).toBe('payments');
  });

  it('should need no filter for a key that reads every event resource, and list the readable types otherwise', () => {
    expect(readableEventTypes(['*'])).toBeNull();
    const every = [...new Set(EVENT_TYPES.map((t) => `${eventResource(t)}:read`))];
    expect(readableEventTypes(every)).toBeNull();
    expect(readableEventTypes(['events:read'])).toEqual([]);
    expect(readableEventTypes(['refunds:write'])).toEqual(['refund.created', 'refund.succeeded', 'refund.failed', 'refund.requires_review']);
  });
});
