// Type-level checks of the typed client (run by `tsc --noEmit`, never executed): the types
// generated from docs/openapi.json are precise enough that wrong calls fail to compile. Each
// expected error below fails the build if its line starts compiling (the types turned loose).
import { payorchClient } from '../../examples/typed-client';

export async function wrongCalls(): Promise<void> {
  const api = payorchClient('https://localhost:8443', 'sk_test_x');
  // @ts-expect-error: no such route
  await api.POST('/customerz', { body: { email: 'a@example.com' } });
  // @ts-expect-error: an email is a string
  await api.POST('/customers', { body: { email: 42 } });
  // @ts-expect-error: an amount is required
  await api.POST('/payments', { body: { currency: 'EUR', paymentMethod: 'card' } });
  // @ts-expect-error: a path parameter is required
  await api.GET('/payments/{id}', {});
  const { data } = await api.GET('/subscriptions/{id}', { params: { path: { id: 'sub_1' } } });
  if (data) {
    // @ts-expect-error: a subscription's status is one of its enum (it would compile were it a string)
    const s: typeof data.data.status = 'not_a_status';
    void s;
    const amount: number = data.data.plan.unitAmount;
    void amount;
  }
}
