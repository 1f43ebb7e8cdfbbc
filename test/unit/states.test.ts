import { DomainError } from '../../src/core/errors';
import { defineMoves, type Moves } from '../../src/core/state-machine';
import { PAYMENT_MOVES, SETTLING_MOVES } from '../../src/modules/payments/payment-states';
import { REFUND_MOVES } from '../../src/modules/payments/refund-states';
import { CHECKOUT_SESSION_MOVES } from '../../src/modules/checkout/checkout-session-states';
import { PAYMENT_LINK_MOVES } from '../../src/modules/checkout/payment-link-states';
import { PUBLIC_PAY_ATTEMPT_MOVES } from '../../src/modules/payments/public-attempt-states';
import { INVOICE_MOVES } from '../../src/modules/invoices/invoice-states';
import { SUBSCRIPTION_MOVES } from '../../src/modules/subscriptions/subscription-states';
import { TEST_CLOCK_MOVES } from '../../src/modules/subscriptions/test-clock-states';

/** The error `fn` throws (undefined when it does not). */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

/** Every move from every status: allowed exactly from the table's `from`, refused with 422 `invalid_state` otherwise. */
function expectChecks<S extends string, M extends string>(moves: Moves<S, M, string, string>, statuses: readonly S[]): void {
  for (const [move, rule] of Object.entries(moves.table) as Array<[M, Moves<S, M, string, string>['table'][M]]>) {
    for (const status of statuses) {
      const allowed = rule.from.includes(status);
      expect([move, status, moves.can(status, move)]).toEqual([move, status, allowed]);
      const err = thrown(() => moves.check(status, move));
      if (allowed) expect(err).toBeUndefined();
      else expect(err).toMatchObject({ name: 'DomainError', code: 'invalid_state', status: 422 });
    }
  }
}

/** The table as `move: [from, to, by, event, stamps]`. */
const rows = (moves: Moves<string, string, string, string>) =>
  Object.fromEntries(Object.entries(moves.table).map(([move, r]) => [move, [r.from, r.to, r.by, r.event, r.stamps]]));

describe('defineMoves', () => {
  const doors = defineMoves<'open' | 'closed' | 'locked', 'close' | 'lock' | 'build', 'door.closed', 'closedAt'>({
    build: { from: [], to: 'open', by: ['merchant'], event: null, stamps: null },
    close: { from: ['open'], to: 'closed', by: ['customer', 'system'], event: 'door.closed', stamps: 'closedAt' },
    lock: { from: ['open', 'closed'], to: 'locked', by: ['system'], event: null, stamps: null },
  }, { object: 'front door', words: { build: 'built', close: 'closed', lock: 'locked up' } });

  it('should answer a move allowed from a status with its rule, and refuse it from any other with 422 invalid_state naming both', () => {
    expect(doors.check('open', 'close')).toBe(doors.table.close);
    const err = thrown(() => doors.check('locked', 'lock'));
    expect(err).toBeInstanceOf(DomainError);
    expect(err).toMatchObject({ code: 'invalid_state', status: 422, message: 'A locked front door cannot be locked up; allowed from open, closed' });
    expect(thrown(() => doors.check('open', 'build'))).toMatchObject({ code: 'invalid_state', message: 'An open front door cannot be built; only a new front door is' });
    expect([doors.can('closed', 'close'), doors.can('open', 'close')]).toEqual([false, true]);
  });

  it('should give what a move writes: its status and the time it stamps, as attributes and as SQL', () => {
    const at = new Date('2030-01-02T03:04:05.000Z');
    expect(doors.columns('close', at)).toEqual({ status: 'closed', closedAt: at });
    expect(doors.columns('lock', at)).toEqual({ status: 'locked' });
    expect(doors.sqlSet('close', '$3')).toBe("status = 'closed', closed_at = $3");
    expect(doors.sqlSet('lock')).toBe("status = 'locked'");
    expect(() => doors.sqlSet('close')).toThrow(/stamps closedAt/);
    expect(doors.sqlFrom('close')).toBe("status = 'open'");
    expect(doors.sqlFrom(['lock', 'close'], 'd.status')).toBe("d.status IN ('open', 'closed')");
    expect(() => doors.sqlFrom('build')).toThrow(/no guard/);
    expect([doors.eventOf('close'), thrown(() => doors.eventOf('lock'))]).toEqual(['door.closed', expect.any(Error)]);
  });

  it('should refuse a table whose names cannot be written as SQL, or a move nobody may make', () => {
    expect(() => defineMoves<string, 'x', never>({ x: { from: [], to: "open'; --", by: ['system'], event: null, stamps: null } }, { object: 'row', words: { x: 'x-ed' } })).toThrow(/plain name/);
    expect(() => defineMoves<string, 'x', never>({ x: { from: ['a'], to: 'b', by: [], event: null, stamps: null } }, { object: 'row', words: { x: 'x-ed' } })).toThrow(/nobody/);
  });
});

describe('the states tables', () => {
  it('should move payments: created pending; settled once from pending (captured, authorised, or sent to 3-D Secure); then captured, voided or answered', () => {
    expect(rows(PAYMENT_MOVES)).toEqual({
      create: [[], 'pending', ['merchant', 'customer', 'system'], null, null],
      succeed: [['pending'], 'succeeded', ['system'], 'payment.succeeded', null],
      authorize: [['pending'], 'requires_capture', ['system'], 'payment.authorized', null],
      require_action: [['pending'], 'requires_action', ['system'], 'payment.requires_action', null],
      fail: [['pending'], 'failed', ['system'], 'payment.failed', null],
      review: [['pending'], 'requires_review', ['system'], 'payment.requires_review', null],
      leave_pending: [['pending'], 'pending', ['system'], null, null],
      review_late_success: [['failed', 'canceled'], 'requires_review', ['system'], 'payment.requires_review', null],
      complete_action: [['requires_action'], 'succeeded', ['customer', 'system'], 'payment.succeeded', null],
      authorize_after_action: [['requires_action'], 'requires_capture', ['customer', 'system'], 'payment.authorized', null],
      fail_action: [['requires_action'], 'failed', ['customer', 'system'], 'payment.failed', null],
      capture: [['requires_capture'], 'succeeded', ['merchant'], 'payment.succeeded', null],
      cancel: [['requires_capture', 'requires_action'], 'canceled', ['merchant'], 'payment.canceled', null],
      expire_authorization: [['requires_capture'], 'canceled', ['system'], 'payment.canceled', null],
    });
    expectChecks(PAYMENT_MOVES, ['pending', 'requires_action', 'requires_capture', 'succeeded', 'failed', 'canceled', 'requires_review']);
    expect(thrown(() => PAYMENT_MOVES.check('succeeded', 'capture'))).toMatchObject({ code: 'invalid_state' });
    // The settling statement guards every payment it writes with one condition.
    expect(PAYMENT_MOVES.sqlFrom(SETTLING_MOVES, 'p.status')).toBe("p.status = 'pending'");
    expect(thrown(() => PAYMENT_MOVES.check('succeeded', 'fail'))).toMatchObject({ message: 'A succeeded payment cannot be failed; allowed from pending' });
  });

  it('should move refunds: created pending with their event; settled once; a late success on a failed one goes to review', () => {
    expect(rows(REFUND_MOVES)).toEqual({
      create: [[], 'pending', ['merchant'], 'refund.created', null],
      succeed: [['pending'], 'succeeded', ['system'], 'refund.succeeded', null],
      fail: [['pending'], 'failed', ['system'], 'refund.failed', null],
      review_late_success: [['failed'], 'requires_review', ['system'], 'refund.requires_review', null],
    });
    expectChecks(REFUND_MOVES, ['pending', 'succeeded', 'failed', 'requires_review']);
  });

  it('should move checkout sessions: open or (a paid retry) complete at creation; an open one completes or expires, stamping the time', () => {
    expect(rows(CHECKOUT_SESSION_MOVES)).toEqual({
      create: [[], 'open', ['merchant'], null, null],
      create_paid: [[], 'complete', ['merchant'], 'checkout.session.completed', 'completedAt'],
      complete: [['open'], 'complete', ['customer', 'system'], 'checkout.session.completed', 'completedAt'],
      expire: [['open'], 'expired', ['merchant', 'system'], 'checkout.session.expired', 'expiredAt'],
    });
    expectChecks(CHECKOUT_SESSION_MOVES, ['open', 'complete', 'expired']);
    expect(thrown(() => CHECKOUT_SESSION_MOVES.check('complete', 'expire'))).toMatchObject({
      code: 'invalid_state', message: 'A complete checkout session cannot be expired; allowed from open',
    });
    expect(CHECKOUT_SESSION_MOVES.sqlSet('complete', 'h.hold_now')).toBe("status = 'complete', completed_at = h.hold_now");
  });

  it('should move payment links between active and inactive, and public pay attempts from running to failed', () => {
    expect(rows(PAYMENT_LINK_MOVES)).toEqual({
      create: [[], 'active', ['merchant'], 'payment_link.created', null],
      deactivate: [['active'], 'inactive', ['merchant'], 'payment_link.updated', null],
      activate: [['inactive'], 'active', ['merchant'], 'payment_link.updated', null],
    });
    expectChecks(PAYMENT_LINK_MOVES, ['active', 'inactive']);
    expect(rows(PUBLIC_PAY_ATTEMPT_MOVES)).toEqual({
      start: [[], 'running', ['customer'], null, null],
      fail: [['running'], 'failed', ['customer'], null, null],
    });
    expectChecks(PUBLIC_PAY_ATTEMPT_MOVES, ['running', 'failed']);
  });

  it('should move invoices: a draft sent (by e-mail, or finalised by its charge) then paid, paid at once, marked paid or voided, each stamping its time', () => {
    expect(rows(INVOICE_MOVES)).toEqual({
      create: [[], 'draft', ['merchant', 'system'], 'invoice.created', null],
      send: [['draft'], 'sent', ['merchant', 'system'], 'invoice.sent', 'sentAt'],
      finalize: [['draft'], 'sent', ['system'], 'invoice.sent', 'sentAt'],
      pay: [['sent'], 'paid', ['system', 'customer'], 'invoice.paid', 'paidAt'],
      pay_at_once: [['draft'], 'paid', ['system'], 'invoice.paid', 'paidAt'],
      mark_paid: [['draft', 'sent'], 'paid', ['merchant'], 'invoice.paid', 'paidAt'],
      void: [['draft', 'sent'], 'void', ['merchant'], 'invoice.voided', 'voidedAt'],
    });
    expectChecks(INVOICE_MOVES, ['draft', 'sent', 'paid', 'void']);
    expect(thrown(() => INVOICE_MOVES.check('paid', 'void'))).toMatchObject({ code: 'invalid_state', message: 'A paid invoice cannot be voided; allowed from draft, sent' });
    // The batch's settling statements take their SET list and guard from the table.
    expect([INVOICE_MOVES.sqlSet('pay', '$2'), INVOICE_MOVES.sqlFrom('finalize', 'i.status')]).toEqual(["status = 'paid', paid_at = $2", "i.status = 'draft'"]);
  });

  it('should move subscriptions: paused and resumed (into past due while an invoice is owed), dunned, canceled', () => {
    expect(rows(SUBSCRIPTION_MOVES)).toEqual({
      create: [[], 'active', ['merchant', 'customer'], 'subscription.created', null],
      pause: [['active', 'past_due'], 'paused', ['merchant'], 'subscription.paused', 'pausedAt'],
      resume: [['paused'], 'active', ['merchant'], 'subscription.resumed', null],
      resume_owing: [['paused'], 'past_due', ['merchant'], 'subscription.resumed', null],
      cancel: [['active', 'past_due', 'paused'], 'canceled', ['merchant'], 'subscription.canceled', null],
      charge_failed: [['active', 'past_due'], 'past_due', ['system'], 'subscription.past_due', null],
      authentication_required: [['active'], 'past_due', ['system'], 'subscription.past_due', null],
      charge_succeeded: [['active', 'past_due'], 'active', ['system', 'customer'], 'subscription.updated', null],
      invoice_voided: [['past_due'], 'active', ['system'], 'subscription.updated', null],
      dunning_exhausted: [['past_due'], 'canceled', ['system'], 'subscription.canceled', null],
      period_end_cancel: [['active', 'past_due'], 'canceled', ['system'], 'subscription.canceled', null],
    });
    expectChecks(SUBSCRIPTION_MOVES, ['active', 'past_due', 'paused', 'canceled']);
    expect(thrown(() => SUBSCRIPTION_MOVES.check('active', 'resume'))).toMatchObject({ code: 'invalid_state', message: 'An active subscription cannot be resumed; allowed from paused' });
    expect(rows(TEST_CLOCK_MOVES)).toEqual({
      create: [[], 'ready', ['merchant'], null, null],
      start_advance: [['ready', 'advancing'], 'advancing', ['merchant'], null, null],
      finish_advance: [['advancing'], 'ready', ['merchant'], null, null],
    });
    expectChecks(TEST_CLOCK_MOVES, ['ready', 'advancing']);
  });
});
