/**
 * What each event type carries as `data.object`: the resource as the API returns it (API.md §13).
 * The one map from type to payload, so a service records an event with its own object's type and
 * the compiler checks the pair (`record(ctx, t, 'invoice.paid', invoice)`), with no cast.
 *
 * Each module adds its own types where it declares its API object (`declare module
 * '../events/event-objects'`: customer.store, catalog.store, payment.types, refund.types,
 * checkout-session.service, payment-link.service, subscription-view, invoice.service,
 * account.service), so this file imports none of them and the events module depends on no
 * module that records events.
 */
// Filled in by each module (declaration merging).
export interface EventObjects {}
