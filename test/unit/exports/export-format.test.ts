import { csvCell, rowEncoder } from '../../../src/modules/exports/export-format';

describe('an export\'s CSV cells (RFC 4180, formula injection)', () => {
  it.each([
    [null, ''],
    [undefined, ''],
    ['plain', 'plain'],
    [2500, '2500'],
    [-5, '-5'],
    [false, 'false'],
    ['a,b', '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ['two\nlines', '"two\nlines"'],
    ['cr\ronly', '"cr\ronly"'],
    ['=1+2', "'=1+2"],
    ['+49 30 1234', "'+49 30 1234"],
    ['-2+3', "'-2+3"],
    ['@SUM(A1)', "'@SUM(A1)"],
    ['\tTAB', "'\tTAB"],
    ['=HYPERLINK("x","y")', '"\'=HYPERLINK(""x"",""y"")"'],
    ['a=b', 'a=b'],
    [{ k: 'v, w' }, '"{""k"":""v, w""}"'],
    [[1, 2], '"[1,2]"'],
    [{}, '{}'],
  ])('should write %j as %j', (value, cell) => {
    expect(csvCell(value)).toBe(cell);
  });

  it('should write a header and CRLF-ended rows of the columns, and JSON Lines as one object a line', () => {
    const csv = rowEncoder('csv', ['id', 'amount', 'metadata']);
    expect(csv.header() + csv.rows([{ id: 'pay_1', amount: 5, metadata: { a: '1' } }, { id: 'pay_2', amount: 7, metadata: {} }]))
      .toBe('id,amount,metadata\r\npay_1,5,"{""a"":""1""}"\r\npay_2,7,{}\r\n');
    const jsonl = rowEncoder('jsonl', ['id']);
    expect(jsonl.header() + jsonl.rows([{ id: 'pay_1', note: 'line\nbreak' }])).toBe('{"id":"pay_1","note":"line\\nbreak"}\n');
  });
});
