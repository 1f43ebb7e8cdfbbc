/** Bound parameters for one statement assembled from parts: each value gets the next `$n`. */
export class Params {
  readonly values: unknown[] = [];

  /** The placeholder for `value`; `pgType` adds a cast (parameters in a SELECT list need one on PostgreSQL). */
  add(value: unknown, pgType?: string): string {
    this.values.push(value);
    return pgType ? `$${this.values.length}::${pgType}` : `$${this.values.length}`;
  }
}
