import fs from 'node:fs';
import path from 'node:path';
import { buildPayorchSchema, printPayorchSchema } from '../../schema/build';

describe('schema/schema.graphql', () => {
  it('should match the schema built from the code (run npm run schema:print)', () => {
    const committed = fs.readFileSync(path.join(__dirname, '..', '..', 'schema', 'schema.graphql'), 'utf8');
    expect(committed).toBe(printPayorchSchema());
  });
});

describe('the built schema', () => {
  it('should be built once: asking again neither rebuilds it nor wraps the mutations again', () => {
    const first = buildPayorchSchema();
    const resolve = first.getMutationType()?.getFields().createPayment.resolve;
    expect(resolve).toBeDefined();
    const again = buildPayorchSchema();
    expect(again).toBe(first);
    expect(again.getMutationType()?.getFields().createPayment.resolve).toBe(resolve);
  });
});
