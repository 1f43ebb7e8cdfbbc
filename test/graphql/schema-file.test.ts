import fs from 'node:fs';
import path from 'node:path';
import { printPayorchSchema } from '../../schema/build';

describe('schema/schema.graphql', () => {
  it('should match the schema built from the code (run npm run schema:print)', () => {
    const committed = fs.readFileSync(path.join(__dirname, '..', '..', 'schema', 'schema.graphql'), 'utf8');
    expect(committed).toBe(printPayorchSchema());
  });
});
