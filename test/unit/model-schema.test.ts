import 'reflect-metadata';
import type { ModelAttributeColumnOptions } from 'sequelize';
import type { ModelCtor } from 'sequelize-typescript';
import { Database } from '../../src/db/database';
import { MODELS } from '../../src/db/models';
import { DIALECT, type TestDatabase } from '../helpers/db';
import { migratedDatabase } from '../helpers/migrated-db';

/** What a column is, in the same words for both dialects and for the models. */
interface ColumnShape {
  type: string;
  nullable: boolean;
  primaryKey: boolean;
  defaultValue: string | null;
}

const DB_TYPES: Array<[RegExp, (m: RegExpMatchArray) => string]> = [
  [/^(?:VARCHAR|CHARACTER VARYING)\((\d+)\)$/, (m) => `varchar(${m[1]})`],
  [/^TEXT$/, () => 'text'],
  [/^BIGINT$/, () => 'bigint'],
  [/^INTEGER$/, () => 'integer'],
  [/^(?:DATETIME|TIMESTAMP WITH TIME ZONE)$/, () => 'timestamp'],
  [/^(?:TINYINT\(1\)|BOOLEAN)$/, () => 'boolean'],
];

function dbType(type: string): string {
  for (const [pattern, name] of DB_TYPES) {
    const m = pattern.exec(type.toUpperCase());
    if (m) return name(m);
  }
  return `unknown ${type}`;
}

function modelType(attr: ModelAttributeColumnOptions): string {
  const type = attr.type as unknown as { key: string; options?: { length?: number } };
  switch (type.key) {
    case 'STRING': return `varchar(${type.options?.length ?? 255})`;
    case 'TEXT': return 'text';
    case 'BIGINT': return 'bigint';
    case 'INTEGER': return 'integer';
    case 'DATE': return 'timestamp';
    case 'BOOLEAN': return 'boolean';
    default: return `unknown ${type.key}`;
  }
}

const defaultText = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

type AnyModel = ModelCtor & { getAttributes(): Record<string, ModelAttributeColumnOptions & { field?: string }> };
const models = MODELS as unknown as AnyModel[];
const tableOf = (model: AnyModel): string => String(model.getTableName());

/** Column name → its shape, as the model declares it. */
function modelColumns(model: AnyModel): Record<string, ColumnShape> {
  const out: Record<string, ColumnShape> = {};
  for (const [name, attr] of Object.entries(model.getAttributes())) {
    out[attr.field ?? name] = {
      type: modelType(attr),
      nullable: attr.allowNull !== false && !attr.primaryKey,
      primaryKey: Boolean(attr.primaryKey),
      defaultValue: defaultText(attr.defaultValue),
    };
  }
  return out;
}

/** A value of the column's type; every id-sized text is the same id, so every association finds its row. */
function sampleValue(attr: ModelAttributeColumnOptions): unknown {
  const type = attr.type as unknown as { key: string; options?: { length?: number } };
  switch (type.key) {
    case 'STRING': return 'obj_1'.slice(0, type.options?.length ?? 255);
    case 'TEXT': return '{"note":"ünïcode ✓"}';
    case 'BIGINT': return 2 ** 40 + 7; // beyond int4: read back as a number, not text
    case 'INTEGER': return 42;
    case 'DATE': return new Date('2024-02-03T04:05:06.789Z');
    case 'BOOLEAN': return !attr.defaultValue; // not the default, so the write is what is read
    default: throw new Error(`no sample for ${type.key}`);
  }
}

describe(`models against the migrated ${DIALECT} schema`, () => {
  let database: TestDatabase;
  let db: Database;
  let tables: string[];

  beforeAll(async () => {
    ({ database, db } = await migratedDatabase());
    tables = ((await db.sequelize.getQueryInterface().showAllTables()) as unknown[])
      .map((t) => (typeof t === 'string' ? t : (t as { tableName: string }).tableName))
      .filter((t) => t !== 'schema_migrations')
      .sort();
  });

  afterAll(async () => {
    await db.close();
    await database.drop();
  });

  it('should have exactly one model for every table the migrations create', () => {
    expect(tables.length).toBeGreaterThanOrEqual(17);
    expect(models.map(tableOf).sort()).toEqual(tables);
  });

  it('should declare every column of each table, and no other, with its type, nullability, primary key and default', async () => {
    const qi = db.sequelize.getQueryInterface();
    for (const model of models) {
      const described = await qi.describeTable(tableOf(model));
      const columns: Record<string, ColumnShape> = {};
      for (const [name, c] of Object.entries(described)) {
        columns[name] = { type: dbType(c.type), nullable: c.allowNull, primaryKey: c.primaryKey, defaultValue: defaultText(c.defaultValue) };
      }
      const declared = modelColumns(model);
      // PostgreSQL only: events.seq defaults to its sequence (migration 0029), so that an instance
      // of the release before, during a rolling upgrade, still numbers the events it writes.
      if (DIALECT === 'postgres' && tableOf(model) === 'events') declared.seq.defaultValue = 'payorch_next_event_seq()';
      expect({ table: tableOf(model), columns: declared }).toEqual({ table: tableOf(model), columns });
    }
  });

  it('should write a row through each model and read the same values back through it and through raw statements', async () => {
    const written = new Map<AnyModel, Record<string, unknown>>();
    for (const model of models) {
      const values: Record<string, unknown> = {};
      for (const [name, attr] of Object.entries(model.getAttributes())) values[name] = sampleValue(attr);
      await db.transaction((transaction) => model.create(values, { transaction }));
      written.set(model, values);
      // A payment counts itself through the payments table's triggers (migration 0019); the
      // count tables' models come after it and write their own rows, read back below.
      if (tableOf(model) === 'payments') {
        await db.execute('DELETE FROM payment_counts');
        await db.execute('DELETE FROM payment_count_deltas');
      }
    }
    expect(models.map(tableOf).indexOf('payments')).toBeLessThan(models.map(tableOf).indexOf('payment_counts'));
    for (const model of models) {
      const values = written.get(model) as Record<string, unknown>;
      const attrs = model.getAttributes();
      const key = Object.fromEntries(Object.entries(attrs).filter(([, a]) => a.primaryKey).map(([n]) => [n, values[n]]));
      const row = await model.findOne({ where: key });
      expect({ table: tableOf(model), row: row?.get({ plain: true }) }).toEqual({ table: tableOf(model), row: values });

      // Raw statements bind values through Database.encode; what a model wrote must compare equal to it.
      const [raw] = await db.select<Record<string, unknown>>(`SELECT * FROM ${tableOf(model)}`);
      const expected: Record<string, unknown> = {};
      const actual: Record<string, unknown> = {};
      for (const [name, attr] of Object.entries(attrs)) {
        const column = attr.field ?? name;
        const value = values[name];
        expected[column] = db.dialect === 'sqlite' ? db.encode(value) : value instanceof Date ? value.toISOString() : value;
        actual[column] = raw[column] instanceof Date ? (raw[column] as Date).toISOString() : raw[column];
      }
      expect({ table: tableOf(model), raw: actual }).toEqual({ table: tableOf(model), raw: expected });
    }
  });

  // A BelongsTo is named after its id column (`endpoint` ↔ endpoint_id); a HasMany is the inverse of one.
  it('should name each association after its foreign key and pair every HasMany with a BelongsTo back', () => {
    const belongsTo = new Set<string>();
    for (const model of models) {
      for (const [alias, association] of Object.entries(model.associations)) {
        if (association.associationType !== 'BelongsTo') continue;
        expect({ from: tableOf(model), alias, foreignKey: association.foreignKey }).toEqual({ from: tableOf(model), alias, foreignKey: `${alias}Id` });
        belongsTo.add(`${tableOf(model)}.${association.foreignKey} -> ${String(association.target.getTableName())}`);
      }
    }
    for (const model of models) {
      for (const [alias, association] of Object.entries(model.associations)) {
        if (association.associationType !== 'HasMany') continue;
        const inverse = `${String(association.target.getTableName())}.${association.foreignKey} -> ${tableOf(model)}`;
        expect({ from: tableOf(model), alias, inverse: belongsTo.has(inverse) }).toEqual({ from: tableOf(model), alias, inverse: true });
      }
    }
  });

  // Uses the rows the test above wrote: every id column holds the same id.
  it('should load every association through the model', async () => {
    let checked = 0;
    for (const model of models) {
      for (const [alias, association] of Object.entries(model.associations)) {
        const row = await model.findOne({ include: [{ association: alias }] });
        const found = row?.get(alias) as unknown;
        const loaded = association.isMultiAssociation ? (found as unknown[]).length === 1 : found !== null && found !== undefined;
        expect({ from: tableOf(model), alias, loaded }).toEqual({ from: tableOf(model), alias, loaded: true });
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(25);
  });
});
