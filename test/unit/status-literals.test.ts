import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');

/**
 * The modules whose statuses are data (ARCHITECTURE.md, "States as data"): every status they
 * write comes from their `*-states.ts` tables (src/core/state-machine.ts), so no status is
 * written anywhere else in them. Add a module here once its writes go through its table.
 */
export const STATUS_MODULES = ['src/modules/payments', 'src/modules/checkout', 'src/modules/invoices', 'src/modules/subscriptions', 'src/modules/exports'];

/** The tables themselves: the one place a status is spelled as what is written. */
const STATES_FILE = /-states\.ts$/;

/** A status as a quoted literal. */
const LITERAL = String.raw`(?:'[a-z_]+'|"[a-z_]+"|\x60[a-z_]+\x60)`;

/**
 * The source's characters by kind: code, string text (quoted strings and template literals;
 * `${…}` inside a template is code again) or comment; each string character with the id of
 * its literal (the parts of one template share it). Regular expression literals are read as
 * code: one holding a quote would mislead this (none in these modules does).
 */
function lex(source: string): { kind: Uint8Array; literal: Int32Array } {
  const STRING = 1, COMMENT = 2; // code is 0
  const n = source.length;
  const kind = new Uint8Array(n);
  const literal = new Int32Array(n).fill(-1);
  // Each `${` open: the brace depth that closes it, and the template it returns to.
  const open: Array<{ depth: number; template: number }> = [];
  let depth = 0;
  let template = -1;
  let next = 0;
  let i = 0;
  const mark = (from: number, to: number, k: number, id = -1) => {
    kind.fill(k, from, to);
    literal.fill(id, from, to);
  };
  while (i < n) {
    const c = source[i];
    if (template >= 0) {
      if (c === '\\') {
        mark(i, i + 2, STRING, template);
        i += 2;
      } else if (c === '`') {
        template = -1;
        i++;
      } else if (c === '$' && source[i + 1] === '{') {
        open.push({ depth, template });
        template = -1;
        i += 2;
      } else {
        mark(i, i + 1, STRING, template);
        i++;
      }
      continue;
    }
    if (c === '/' && source[i + 1] === '/') {
      const end = source.indexOf('\n', i);
      const to = end < 0 ? n : end;
      mark(i, to, COMMENT);
      i = to;
    } else if (c === '/' && source[i + 1] === '*') {
      const to = source.indexOf('*/', i + 2) + 2;
      mark(i, to, COMMENT);
      i = to;
    } else if (c === "'" || c === '"') {
      const id = next++;
      let j = i + 1;
      while (j < n && source[j] !== c && source[j] !== '\n') j += source[j] === '\\' ? 2 : 1;
      mark(i + 1, j, STRING, id);
      i = j + 1;
    } else if (c === '`') {
      template = next++;
      i++;
    } else {
      if (c === '{') depth++;
      if (c === '}') {
        const top = open[open.length - 1];
        if (top && top.depth === depth) {
          open.pop();
          template = top.template;
          i++;
          continue;
        }
        depth--;
      }
      i++;
    }
  }
  return { kind, literal };
}

/** Where the text of each string literal is, `${…}` read as `?`; `at[k]` is the source index of its k-th character. */
function stringLiterals(source: string, lexed: ReturnType<typeof lex>): Array<{ text: string; at: number[] }> {
  const found = new Map<number, { text: string; at: number[]; last: number }>();
  for (let i = 0; i < source.length; i++) {
    const id = lexed.literal[i];
    if (id < 0) continue;
    const lit = found.get(id) ?? { text: '', at: [], last: i - 1 };
    // A gap inside one literal is a `${…}` of its template.
    if (i !== lit.last + 1 && lit.text !== '') {
      lit.text += '?';
      lit.at.push(lit.last + 1);
    }
    lit.text += source[i];
    lit.at.push(i);
    lit.last = i;
    found.set(id, lit);
  }
  return [...found.values()];
}

/** The top-level items of a comma-separated list (`a, f(b, c), 'd'` → three). */
function splitList(text: string): string[] {
  const items: string[] = [];
  let level = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '(') level++;
    else if (text[i] === ')') level--;
    else if (text[i] === ',' && level === 0) {
      items.push(text.slice(start, i));
      start = i + 1;
    }
  }
  items.push(text.slice(start));
  return items.map((s) => s.trim());
}

/** SQL in a string literal that writes a status: indexes (into the literal) of each write. */
function sqlWrites(text: string): number[] {
  const writes: number[] = [];
  // `status = …` after SET (an UPDATE's list), or a literal that is only a SET list's item
  // (`status = 'complete'`, joined into a statement elsewhere). After WHERE, AND, OR, ON, WHEN…
  // it is a comparison.
  for (const m of text.matchAll(/\b(?:\w+\.)?status\s*=(?!=)/gi)) {
    const before = text.slice(0, m.index);
    const keywords = [...before.matchAll(/\b(SET|WHERE|AND|OR|ON|WHEN|THEN|ELSE|HAVING|SELECT|RETURNING|FROM|JOIN|NOT)\b/gi)];
    const last = keywords[keywords.length - 1];
    if (last ? last[1].toUpperCase() === 'SET' : !/\b(AND|OR|WHERE)\b/i.test(text)) writes.push(m.index);
  }
  // INSERT INTO t (…, status, …) VALUES (…, 'open', …): the status given as a literal.
  for (const m of text.matchAll(/INSERT\s+INTO\s+\w+\s*\(([^)]*)\)\s*VALUES\s*\(/gi)) {
    const column = splitList(m[1]).indexOf('status');
    if (column < 0) continue;
    let level = 1;
    let end = m.index + m[0].length;
    for (; end < text.length && level > 0; end++) level += text[end] === '(' ? 1 : text[end] === ')' ? -1 : 0;
    const values = splitList(text.slice(m.index + m[0].length, end - 1));
    if (new RegExp(`^${LITERAL}$`).test(values[column] ?? '')) writes.push(m.index);
  }
  return writes;
}

/** The expression after `from` up to its end at depth 0 (`,` `;` `)` `]` `}`, or a line break that ends it). */
function expressionAfter(source: string, lexed: ReturnType<typeof lex>, from: number): { text: string; end: string } {
  let level = 0;
  let i = from;
  for (; i < source.length; i++) {
    if (lexed.kind[i] !== 0) continue;
    const c = source[i];
    if ('([{'.includes(c)) level++;
    else if (')]}'.includes(c)) {
      if (level === 0) break;
      level--;
    } else if ((c === ',' || c === ';') && level === 0) break;
    else if (c === '\n' && level === 0) {
      // A ternary or an operator carried to the next line goes on.
      const so = source.slice(from, i).trimEnd();
      const nextLine = source.slice(i + 1).trimStart();
      if (so !== '' && !/[?:|&=+(]$/.test(so) && !/^[?:|&.]/.test(nextLine)) break;
    }
  }
  return { text: source.slice(from, i).replace(/\/\/.*$/gm, '').trim(), end: source[i] ?? '' };
}

/**
 * Whether an expression's value can be a status literal: one as its operand (a ternary's branch,
 * a fallback), not only compared against, nor inside a call's arguments, an array or an object.
 */
function yieldsLiteral(expression: string): boolean {
  const compared = new RegExp(String.raw`(===|!==|==|!=)\s*${LITERAL}|${LITERAL}\s*(===|!==|==|!=)`, 'g');
  let operands = expression.replace(compared, ' _ ');
  for (let before = ''; before !== operands;) {
    before = operands;
    operands = operands.replace(/([\w$\])]\s*)\([^()]*\)/g, '$1_').replace(/\[[^[\]]*\]/g, '_').replace(/\{[^{}]*\}/g, '_');
  }
  return new RegExp(String.raw`(^|[?:(]|\?\?|\|\||&&)\s*${LITERAL}`).test(operands);
}

/**
 * The lines of `source` that write a status, 1-based:
 * - SQL: `SET … status = …` (whatever the value), a literal that is a SET item `status = …`,
 *   and `INSERT INTO t (…status…) VALUES (…'literal'…)`;
 * - TypeScript: a property `status: …` or an assignment `status = …` (`x.status = …`,
 *   `const status: T = …`, a default) whose value can be a quoted literal (`'open'`,
 *   `c ? 'a' : 'b'`, `x ?? 'a'`), not where the literal is only compared (`=== 'open'`).
 * Not matched: reads and comparisons (`status === 'x'`, `WHERE status = 'x'`, `status IN (…)`),
 * types (`status: 'a' | 'b'`, an interface's `status: 'a';`, a parameter's), a Sequelize
 * `where: { status: 'open' }`, a literal as a call's argument (`z.literal('active')`), comments.
 */
export function statusWrites(source: string): number[] {
  const lexed = lex(source);
  const lineOf = (i: number) => source.slice(0, i).split('\n').length;
  const lines = new Set<number>();
  for (const lit of stringLiterals(source, lexed)) {
    for (const k of sqlWrites(lit.text)) lines.add(lineOf(lit.at[k]));
  }
  for (const m of source.matchAll(/\bstatus\s*(:|=(?![=>]))/g)) {
    if (lexed.kind[m.index] !== 0) continue;
    const lineStart = source.lastIndexOf('\n', m.index) + 1;
    if (m[1] === ':' && /where\s*:\s*\{[^}]*$/.test(source.slice(lineStart, m.index))) continue;
    let { text, end } = expressionAfter(source, lexed, m.index + m[0].length);
    if (m[1] === ':') {
      // `const status: T = value`: the type, then the value.
      const assigned = /^[^=]*?[^=!<>]=(?![=>])/.exec(text);
      if (assigned) text = text.slice(assigned[0].length);
      else if (end === ';' || end === ')' || /(^|[^|])\|([^|]|$)/.test(text)) continue; // a type
    }
    if (yieldsLiteral(text.trim())) lines.add(lineOf(m.index));
  }
  return [...lines].sort((a, b) => a - b);
}

function filesUnder(dir: string): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? filesUnder(p) : p.endsWith('.ts') ? [p] : [];
  });
}

describe('status writes', () => {
  it('should write statuses only in the states tables of the modules whose states are data', () => {
    const files = STATUS_MODULES.flatMap(filesUnder).filter((f) => !STATES_FILE.test(f));
    // The files are there (a wrong folder would find nothing and pass).
    expect(files.length).toBeGreaterThan(20);
    const found = files.flatMap((file) => {
      const source = fs.readFileSync(path.join(ROOT, file), 'utf8');
      return statusWrites(source).map((line) => `${file}:${line}: ${source.split('\n')[line - 1].trim()}`);
    });
    expect(found).toEqual([]);
  });

  // The check itself, on writes these modules made before their tables, and on reads they make.
  it.each([
    ["      metadata: data.metadata ?? {},\n      status: 'pending',\n      failureCode: null,", [2]],
    ["    metadata: JSON.stringify(payment.metadata), status: 'pending', amount_refunded: 0,", [1]],
    ["  const status: Payment['status'] = outcome.unresolved ? 'pending' : result?.outcome === 'succeeded' ? 'succeeded' : 'failed';", [1]],
    ["  const status: Refund['status'] = result.outcome === 'succeeded'\n    ? 'succeeded'\n    : 'failed';", [1]],
    ["    const review: Refund = { ...stored, status: 'requires_review', failureCode: null };", [1]],
    ["      id: newId('cs'), checkoutMode: 'payment', status: complete ? 'complete' : 'open',", [1]],
    ["  x.status = 'failed';\n  let status = 'open';\n  const { status = 'open' } = row;", [1, 2, 3]],
    ["  const s = { status: fallback ?? 'open' };", [1]],
    ["  const s = { status: (late ? 'expired' : 'open') };", [1]],
    ["      `INSERT INTO refunds (id, amount, status, created_at)\n       VALUES ($1, $2, 'pending', $3)`,", [1]],
    ['    await this.db.execute("UPDATE public_pay_attempts SET status = \'failed\' WHERE id = $1", [id]);', [1]],
    ["      `UPDATE refunds SET status = $1, failure_code = $2 WHERE id = $6 AND status = 'pending'`,", [1]],
    ["      sql: `UPDATE checkout_sessions s SET paying_until = NULL,\n             status = 'complete', completed_at = h.hold_now\n        FROM ${source} h WHERE s.id = h.id`,", [2]],
    ["    const sets = [`status = 'complete'`, `completed_at = ${p.add(now)}`];", [1]],
  ] as const)('should find the status written in %j', (source, lines) => {
    expect(statusWrites(source)).toEqual(lines);
  });

  it.each([
    "  status: 'pending' | 'succeeded' | 'failed';",
    "  status: 'active';",
    "  @Column({ type: DataType.STRING(8), allowNull: false }) declare status: 'running' | 'failed';",
    "  async run<R extends { status: 'succeeded' | 'failed' }>(pay: () => Promise<R>): Promise<R> {",
    "    if (payment.status !== 'succeeded') throw refused();\n    if (s.status === 'open' && late) return 'expired';",
    '    const status = effectiveStatus(session, now);\n    return { status: PAY_RESULT_OF[payment.status], id };',
    "    outcome = result.status === 'failed' ? 'failed' : 'released';",
    "        `SELECT id FROM payments WHERE status = 'pending' AND lease_until < ${now}`,",
    "    if (input.status === 'open') filter.raw((p) => `status = 'open' AND expires_at > ${p(now)}`);",
    "    const count = (w: string) => `(SELECT COUNT(*) FROM t WHERE ${w} AND status = 'failed')`;",
    '        WHERE id = ${p.add(done.id)} AND status = ${p.add(stored.status)}`,',
    "    { where: { id, status: 'open' } },",
    "    status: z.literal('active'),\n    status: z.enum(['pending', 'succeeded'], { error: 'status' }),",
    "    return { status: labelOf({ kind: 'open' }), id };",
    "    // status: 'pending' was written here\n    /* SET status = 'x' */",
    '    const sets = [CHECKOUT_SESSION_MOVES.sqlSet(write.move, p.add(now)), `updated_at = ${p.add(now)}`];',
  ])('should take %j for a read, a type or a comparison', (source) => {
    expect(statusWrites(source)).toEqual([]);
  });
});
