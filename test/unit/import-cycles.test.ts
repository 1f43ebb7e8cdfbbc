import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');

/** Every relative import (type-only ones too) of every .ts file under the given folders. */
function importGraph(folders: string[]): Map<string, string[]> {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (p.endsWith('.ts')) files.push(p);
    }
  };
  folders.forEach((f) => walk(path.join(ROOT, f)));
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = fs.readFileSync(file, 'utf8');
    const deps: string[] = [];
    for (const m of text.matchAll(/(?:import|export)[^'"]*?from\s+['"](\.[^'"]+)['"]|import\(['"](\.[^'"]+)['"]\)/g)) {
      const target = path.resolve(path.dirname(file), m[1] ?? m[2]);
      if (fs.existsSync(`${target}.ts`)) deps.push(`${target}.ts`);
      else if (fs.existsSync(path.join(target, 'index.ts'))) deps.push(path.join(target, 'index.ts'));
    }
    graph.set(file, deps);
  }
  return graph;
}

/** The strongly connected components with more than one file (Tarjan): each is an import cycle. */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(path.relative(ROOT, w));
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('imports', () => {
  it('should form no cycle in the service and its transports', () => {
    const graph = importGraph(['src', 'rest', 'schema', 'workers']);
    // The graph holds real edges (an import form the reader missed would leave it empty and cycle-free).
    expect(graph.get(path.join(ROOT, 'src/services.ts'))).toContain(path.join(ROOT, 'src/modules/payments/payment.service.ts'));
    expect(cycles(graph)).toEqual([]);
  });

  it('should keep the two transports apart: rest/ and schema/ share src/http, never import each other', () => {
    const graph = importGraph(['src', 'rest', 'schema', 'workers']);
    const crossing: string[] = [];
    for (const [file, deps] of graph) {
      const from = path.relative(ROOT, file).split(path.sep)[0];
      for (const dep of deps) {
        const to = path.relative(ROOT, dep).split(path.sep)[0];
        if ((from === 'rest' && to === 'schema') || (from === 'schema' && to === 'rest')) crossing.push(`${path.relative(ROOT, file)} -> ${path.relative(ROOT, dep)}`);
      }
    }
    expect(crossing).toEqual([]);
    // What they share is there: both reach the shared HTTP layer.
    expect(graph.get(path.join(ROOT, 'schema/server.ts'))).toContain(path.join(ROOT, 'src/http/auth.ts'));
    expect(graph.get(path.join(ROOT, 'rest/app.ts'))).toContain(path.join(ROOT, 'src/http/app.ts'));
  });

  it('should find a cycle when there is one (the check itself)', () => {
    const a = path.join(ROOT, 'a.ts');
    const b = path.join(ROOT, 'b.ts');
    expect(cycles(new Map([[a, [b]], [b, [a]]]))).toEqual([['a.ts', 'b.ts']]);
  });
});
