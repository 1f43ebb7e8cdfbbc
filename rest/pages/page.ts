import type { Services } from '../../src/services';
import type { PageView } from './page-layout';

/** What a page route gets besides the services: its path parameters and the request id. */
export interface PageRequest {
  params: Record<string, string>;
  requestId: string;
}

/** A public HTML page (no API key): a GET route whose body is one service call and a template. */
export interface Page {
  path: string;
  render(services: Services, request: PageRequest): PageView | Promise<PageView>;
}

/**
 * A hosted page as a 3-D Secure challenge brings the customer back to it (`?payment_id=`, the
 * payment its pay made): the page's own view of that payment's outcome, or where to go next (the
 * merchant's success URL).
 */
export interface ChallengeReturnPage {
  path: string;
  render(services: Services, request: PageRequest, paymentId: string): Promise<PageView | { redirectTo: string }>;
}
