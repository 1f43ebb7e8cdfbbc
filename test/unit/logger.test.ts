import { Writable } from 'node:stream';
import { accessLogger, createLogger } from '../../src/logger';

function capture(): { lines: () => Array<Record<string, unknown>>; stream: Writable } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return { stream, lines: () => text.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('logger', () => {
  it('redacts secrets by field name on every line but the access line, whose fields are fixed', () => {
    const out = capture();
    const logger = createLogger('info', out.stream);
    const access = accessLogger(logger);
    logger.info({ secret: 'whsec_x', card: { number: '4242424242424242' }, requestId: 'req_1' }, 'something');
    access.info({ requestId: 'req_2', method: 'POST', path: '/v1/payments', status: 201, number: 7 }, 'request');
    logger.warn({ authorization: 'Bearer sk_test_x' }, 'after');
    const [first, accessLine, after] = out.lines();
    expect(first).toMatchObject({ secret: '[redacted]', card: '[redacted]', requestId: 'req_1', msg: 'something' });
    // The access line goes out as given, without the walk over every key.
    expect(accessLine).toMatchObject({ requestId: 'req_2', method: 'POST', path: '/v1/payments', status: 201, number: 7, level: 'info', msg: 'request' });
    // The parent keeps its redaction after the child was made.
    expect(after).toMatchObject({ authorization: '[redacted]', level: 'warn' });
  });

  it('the access logger follows its parent level', () => {
    const out = capture();
    const access = accessLogger(createLogger('warn', out.stream));
    access.info({ requestId: 'req_3' }, 'request');
    access.warn({ requestId: 'req_4' }, 'request');
    expect(out.lines().map((l) => l.requestId)).toEqual(['req_4']);
  });
});
