export interface Refund {
  id: string;
  object: 'refund';
  livemode: boolean;
  paymentId: string;
  amount: number;
  currency: string;
  reason: string | null;
  /**
   * `requires_review`: the gateway reported the refund made after it had been recorded failed
   * (its amount given back); the amount is counted as refunded again, someone must check it.
   */
  status: 'pending' | 'succeeded' | 'failed' | 'requires_review';
  gatewayId: string | null;
  failureCode: string | null;
  failureMessage: string | null;
  createdAt: string;
  updatedAt: string;
}

/** The events that carry this module's objects (EventObjects: the events module's map of type to payload). */
declare module '../events/event-objects' {
  interface EventObjects {
    'refund.created': Refund;
    'refund.succeeded': Refund;
    'refund.failed': Refund;
    'refund.requires_review': Refund;
  }
}
