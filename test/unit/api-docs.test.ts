import fs from 'node:fs';
import path from 'node:path';
import { EVENT_TYPES } from '../../src/modules/events/event.service';

describe('docs/api.md', () => {
  it('should list every event type, and no other', () => {
    const doc = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'api.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## Events'), doc.indexOf('## Webhook endpoints'));
    const table = section.split('\n').filter((line) => line.startsWith('| ') && !line.startsWith('| Resource'));
    const listed = table.flatMap((line) => [...line.matchAll(/`([a-z_.]+)`/g)].map((m) => m[1]));
    expect([...listed].sort()).toEqual([...EVENT_TYPES].sort());
  });
});
