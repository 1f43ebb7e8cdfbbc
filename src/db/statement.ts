/**
 * One data-modifying CTE of a PostgreSQL group-commit statement. A store that writes its own
 * table as part of another module's statement hands out such a part (its name chosen by the
 * caller, its SQL by the store); the caller's store only arranges the parts, so no store writes
 * another module's table itself.
 */
export interface CtePart {
  name: string;
  sql: string;
}

/** The parts as the body of a WITH clause, in order. */
export function cteList(parts: CtePart[]): string {
  return parts.map((part) => `${part.name} AS (${part.sql})`).join(',\n');
}
