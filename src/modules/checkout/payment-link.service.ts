import type { Database } from '../../db/database';
import type { RequestContext } from '../../core/context';
import { requirePermission } from '../../core/context';
import { DomainError, notFound } from '../../core/errors';
import { newId, randomBase62 } from '../../core/ids';
import { mergeMetadata, parseInput } from '../../core/validation';
import type { Counted, ListOptions, PageFor } from '../../core/pagination';
import type { IdempotencyKey } from '../../core/idempotency';
import type { EventService } from '../events/event.service';
import type { IdempotencyService } from '../idempotency/idempotency.service';
import { IDEMPOTENT_OPERATIONS } from '../../core/idempotent-operations';
import type { CatalogService } from '../catalog/catalog.service';
import type { AccountService } from '../accounts/account.service';
import { PaymentLinkModel } from './payment-link.model';
import { CheckoutStore, toLinkRecord, type CaptureMethod, type PaymentLinkRecord, type ReturnedPayment } from './checkout.store';
import { createPaymentLinkInput, listPaymentLinksInput, updatePaymentLinkInput } from './checkout.inputs';
import { publicPayInput } from '../payments/payment.inputs';
import type { PayResult, PublicPayPath, PublicRequest } from '../payments/public-pay';
import { PAYMENT_LINK_MOVES, linkMoveTo } from './payment-link-states';
import type { PublicUrls } from '../payments/public-urls';

export interface PaymentLink {
  id: string;
  object: 'payment_link';
  livemode: boolean;
  slug: string;
  url: string;
  name: string;
  description: string | null;
  amount: number;
  currency: string;
  priceId: string | null;
  status: 'active' | 'inactive';
  /** How each payment of the link is captured: `manual` authorises it (requires_capture). */
  captureMethod: CaptureMethod;
  metadata: Record<string, string>;
  createdAt: string;
  updatedAt: string;
}

/** What the public link page shows: nothing internal (no account id or metadata). */
export interface PublicPaymentLink {
  object: 'payment_link';
  livemode: boolean;
  slug: string;
  name: string;
  description: string | null;
  amount: number;
  currency: string;
  merchantName: string;
  status: 'active';
}

/**
 * The link's page after a 3-D Secure challenge (`/pay/{slug}?payment_id=`): the link as the page
 * shows it (inactive too: a payment made before it was deactivated still shows its outcome) and
 * the payment's outcome when a pay of this link made it.
 */
export interface PaymentLinkReturn {
  link: Omit<PublicPaymentLink, 'status'> & { status: 'active' | 'inactive' };
  payment: ReturnedPayment | null;
}

/**
 * A slug carries 22 base62 characters, about 131 bits: links are unguessable, so knowing one is
 * the only way to reach it (the API contract asks at least 96).
 */
const SLUG_LENGTH = 22;

const searchText = (link: { id: string; slug: string; name: string; description: string | null }) =>
  [link.id, link.slug, link.name, link.description ?? ''].join(' ').toLowerCase();

const inactive = () => new DomainError('payment_link_inactive', 'This payment link is no longer active');

/** Payment links: a shareable page where anyone with the link pays a fixed amount. Every pay is its own payment. */
export class PaymentLinkService {
  private readonly store: CheckoutStore;

  constructor(
    private readonly db: Database,
    private readonly events: EventService,
    private readonly idempotency: IdempotencyService,
    private readonly catalog: CatalogService,
    private readonly accounts: AccountService,
    private readonly pay: PublicPayPath,
    private readonly urls: PublicUrls,
  ) {
    this.store = new CheckoutStore(db);
  }

  async create(ctx: RequestContext, input: unknown, idem?: IdempotencyKey): Promise<PaymentLink> {
    requirePermission(ctx, 'payment_links', 'write');
    const data = parseInput(createPaymentLinkInput, input);
    let amount = data.amount as number;
    let currency = data.currency as string;
    if (data.priceId !== undefined) {
      const found = await this.catalog.lookupPrice(ctx, data.priceId);
      if (!found) throw notFound('price', data.priceId, 'priceId');
      if (!found.price.active) throw new DomainError('invalid_parameter', `Price '${found.price.id}' is not active`, 'priceId');
      if (found.price.recurring) throw new DomainError('invalid_parameter', 'A payment link takes a one-time price', 'priceId');
      amount = found.price.unitAmount;
      currency = found.price.currency;
    }
    const now = ctx.clock.now();
    return this.db.transaction((transaction) => this.idempotency.once(transaction, idem, IDEMPOTENT_OPERATIONS.createPaymentLink, async () => {
      const id = newId('plink');
      const slug = randomBase62(SLUG_LENGTH);
      const description = data.description ?? null;
      const row = await PaymentLinkModel.create({
        id, accountId: ctx.accountId, mode: ctx.mode, slug, name: data.name, description, amount, currency,
        priceId: data.priceId ?? null, captureMethod: data.captureMethod ?? 'automatic', ...PAYMENT_LINK_MOVES.columns('create', now), searchText: searchText({ id, slug, name: data.name, description }),
        metadata: JSON.stringify(data.metadata ?? {}), createdAt: now, updatedAt: now,
      }, { transaction });
      const link = this.toApi(toLinkRecord(row.get({ plain: true }) as Record<string, unknown>));
      await this.events.record(ctx, transaction, PAYMENT_LINK_MOVES.eventOf('create'), link);
      return link;
    }));
  }

  async retrieve(ctx: RequestContext, id: string): Promise<PaymentLink> {
    requirePermission(ctx, 'payment_links', 'read');
    const found = await this.store.findLink({ id }, ctx);
    if (!found) throw notFound('payment_link', id);
    return this.toApi(found);
  }

  /** Batch lookup for DataLoader (Payment.paymentLink); unknown ids are absent. */
  async findMany(ctx: RequestContext, ids: readonly string[]): Promise<Map<string, PaymentLink>> {
    requirePermission(ctx, 'payment_links', 'read');
    return new Map((await this.store.findLinks(ctx, ids)).map((l) => [l.id, this.toApi(l)]));
  }

  async list<O extends ListOptions = Counted>(ctx: RequestContext, query: unknown, options?: O): Promise<PageFor<PaymentLink, O>> {
    requirePermission(ctx, 'payment_links', 'read');
    const page = await this.store.listLinks(ctx, parseInput(listPaymentLinksInput, query), options);
    return { ...page, data: page.data.map((l) => this.toApi(l)) } as PageFor<PaymentLink, O>;
  }

  async update(ctx: RequestContext, id: string, input: unknown): Promise<PaymentLink> {
    requirePermission(ctx, 'payment_links', 'write');
    const data = parseInput(updatePaymentLinkInput, input);
    return this.db.transaction(async (transaction) => {
      const row = await PaymentLinkModel.findOne({ where: { id, accountId: ctx.accountId, mode: ctx.mode }, transaction, lock: this.db.rowLock(transaction) });
      if (!row) throw notFound('payment_link', id);
      const current = toLinkRecord(row.get({ plain: true }) as Record<string, unknown>);
      const now = ctx.clock.now();
      const changes: Record<string, unknown> = {};
      if (data.name !== undefined && data.name !== current.name) changes.name = data.name;
      if (data.description !== undefined && data.description !== current.description) changes.description = data.description;
      const move = data.status !== undefined && data.status !== current.status ? linkMoveTo(data.status) : null;
      if (move) Object.assign(changes, PAYMENT_LINK_MOVES.columns(move, now));
      if (data.metadata !== undefined) {
        const merged = JSON.stringify(mergeMetadata(current.metadata, data.metadata));
        if (merged !== JSON.stringify(current.metadata)) changes.metadata = merged;
      }
      if (Object.keys(changes).length === 0) return this.toApi(current);
      changes.searchText = searchText({ ...current, name: (changes.name as string | undefined) ?? current.name, description: data.description !== undefined ? data.description : current.description });
      changes.updatedAt = now;
      await row.update(changes, { transaction });
      const link = this.toApi(toLinkRecord(row.get({ plain: true }) as Record<string, unknown>));
      // A status move writes the table's event (the same one a change of its details writes).
      await this.events.record(ctx, transaction, move ? PAYMENT_LINK_MOVES.eventOf(move) : 'payment_link.updated', link);
      return link;
    });
  }

  /** The public view by slug (no key); 410 payment_link_inactive when the link is inactive. */
  async publicView(slug: string): Promise<PublicPaymentLink> {
    const link = await this.activeLink(slug);
    return { ...(await this.publicFields(link)), status: link.status };
  }

  /** The page a 3-D Secure challenge returns to (`/pay/{slug}?payment_id=`): 404 when there is no such link. */
  async publicReturn(slug: string, paymentId: string): Promise<PaymentLinkReturn> {
    const link = await this.store.findLink({ slug });
    if (!link) throw notFound('payment_link', slug, 'slug');
    const payment = await this.store.paymentOf(paymentId, { paymentLinkId: link.id });
    return { link: { ...(await this.publicFields(link)), status: link.status }, payment };
  }

  private async publicFields(link: PaymentLinkRecord): Promise<Omit<PublicPaymentLink, 'status'>> {
    return {
      object: 'payment_link', livemode: link.livemode, slug: link.slug, name: link.name, description: link.description,
      amount: link.amount, currency: link.currency, merchantName: await this.accounts.displayName(link.accountId),
    };
  }

  /**
   * The public pay (no key): every pay is its own payment, carrying `paymentLinkId`. The payer is
   * anonymous: no customer is attached, the e-mail given goes on the payment as `receiptEmail`.
   */
  async publicPay(slug: string, input: unknown, idem: IdempotencyKey | undefined, request: PublicRequest): Promise<PayResult> {
    const found = await this.store.findLink({ slug });
    if (!found) throw notFound('payment_link', slug, 'slug');
    const key = this.pay.accountKey(idem, found);
    const noRedirect = () => null;
    // A retry of a pay that was answered replays it, even if the link was deactivated since.
    await this.pay.replayIfPaid(key, noRedirect);
    const link = await this.activeLink(slug);
    const ctx = this.pay.context(link, request.requestId);
    const data = parseInput(publicPayInput, input);
    return this.pay.attempt({ kind: 'payment_link', id: link.id, accountId: link.accountId, mode: link.mode }, request, async () => {
      const { result } = await this.pay.charge(ctx, {
        amount: link.amount, currency: link.currency, description: link.description ?? link.name, customerId: null,
        receiptEmail: data.email ?? null, card: data.card, captureMethod: link.captureMethod, returnUrl: this.urls.paymentLink(link.slug),
      }, { paymentLinkId: link.id }, key, noRedirect);
      return result;
    });
  }

  /** The link a slug names: 404 when none, 410 when inactive. */
  private async activeLink(slug: string): Promise<PaymentLinkRecord & Pick<PublicPaymentLink, 'status'>> {
    const link = await this.store.findLink({ slug });
    if (!link) throw notFound('payment_link', slug, 'slug');
    if (link.status !== 'active') throw inactive();
    return { ...link, status: link.status };
  }

  toApi(l: PaymentLinkRecord): PaymentLink {
    return {
      id: l.id, object: 'payment_link', livemode: l.livemode, slug: l.slug, url: this.urls.paymentLink(l.slug), name: l.name,
      description: l.description, amount: l.amount, currency: l.currency, priceId: l.priceId, status: l.status, captureMethod: l.captureMethod, metadata: l.metadata,
      createdAt: l.createdAt, updatedAt: l.updatedAt,
    };
  }
}

/** The events that carry this module's objects (EventObjects: the events module's map of type to payload). */
declare module '../events/event-objects' {
  interface EventObjects {
    'payment_link.created': PaymentLink;
    'payment_link.updated': PaymentLink;
  }
}
