/**
 * The Prometheus text exposition read back into series, so tests compare names, labels and
 * values rather than grep the text.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  samples: Sample[];
  /** `# TYPE` lines: every metric registered, with or without series. */
  types: Map<string, string>;
  /** `# HELP` lines. */
  help: Map<string, string>;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/gy;

function unescape(value: string): string {
  return value.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
}

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  let read = 0;
  for (let m = LABEL.exec(text); m; m = LABEL.exec(text)) {
    labels[m[1]] = unescape(m[2]);
    read = LABEL.lastIndex;
  }
  if (read !== text.length) throw new Error(`unreadable labels in exposition line: ${line}`);
  return labels;
}

function parseValue(text: string): number {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  return Number(text);
}

/** Reads every line; throws on one that is neither a comment nor a sample. */
export function parseExposition(text: string): Exposition {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  const help = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    if (line.startsWith('# TYPE ')) {
      const [name, type] = line.slice(7).split(' ');
      types.set(name, type);
      continue;
    }
    if (line.startsWith('# HELP ')) {
      const rest = line.slice(7);
      const space = rest.indexOf(' ');
      help.set(rest.slice(0, space), rest.slice(space + 1));
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`unreadable exposition line: ${line}`);
    samples.push({ name: m[1], labels: m[2] ? parseLabels(m[2], line) : {}, value: parseValue(m[3]) });
  }
  return { samples, types, help };
}

/** The series of `name` whose labels include every one of `labels`. */
export function seriesOf(exposition: Exposition, name: string, labels: Record<string, string> = {}): Sample[] {
  return exposition.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/**
 * The value of the one series of `name` with exactly these labels (an absent counter series
 * reads 0, as Prometheus's `rate` treats a series not yet there). Throws when several match.
 */
export function valueOf(exposition: Exposition, name: string, labels: Record<string, string> = {}): number {
  const exact = seriesOf(exposition, name, labels).filter((s) => Object.keys(s.labels).length === Object.keys(labels).length);
  if (exact.length > 1) throw new Error(`${exact.length} series of ${name} match ${JSON.stringify(labels)}`);
  return exact[0]?.value ?? 0;
}

/**
 * Every metric name the exposition answers to in a query: each registered one, and a
 * histogram's or summary's `_bucket`, `_sum` and `_count`.
 */
export function queryableNames(exposition: Exposition): Set<string> {
  const names = new Set<string>();
  for (const [name, type] of exposition.types) {
    names.add(name);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`);
    if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(`${name}${suffix}`);
  }
  return names;
}
