import { DataTypes, type QueryInterface } from 'sequelize';

// The events of one object (the dashboard's payment detail, GraphQL `events(objectId:)`): the id
// of the object an event carries (`data.object.id`) as a column of its own, indexed like the
// other event lists, so they are found without reading every event of the account. Events
// written before it get theirs from their JSON.
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.addColumn('events', 'object_id', { type: DataTypes.STRING(64), allowNull: true });
  const objectId = qi.sequelize.getDialect() === 'postgres' ? "(data::json -> 'object' ->> 'id')" : "json_extract(data, '$.object.id')";
  await qi.sequelize.query(`UPDATE events SET object_id = ${objectId}`);
  await qi.addIndex('events', ['account_id', 'mode', 'object_id', 'created_at', 'id'], { name: 'events_object_idx' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.removeIndex('events', 'events_object_idx');
  await qi.sequelize.query('ALTER TABLE events DROP COLUMN object_id');
}
