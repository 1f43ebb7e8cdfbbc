import { escapeHtml } from '../../src/core/html';

/** Markup that is already safe to emit: what the `html` template returns. */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

// The e-mails escape with the same function, from the service's side of the house.
export { escapeHtml };

function fragment(value: unknown): string {
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(fragment).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

/**
 * Page markup: every interpolated value is escaped unless it is itself `html` output, so a
 * page cannot forget to escape what a caller or the database wrote.
 */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0];
  values.forEach((value, i) => {
    out += fragment(value) + strings[i + 1];
  });
  return new SafeHtml(out);
}
