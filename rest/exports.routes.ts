import { createExportInput, listExportsInput } from '../src/modules/exports/export.inputs';
import { exportSchema } from '../src/modules/exports/export.schemas';
import { EXPORT_CONTENT_TYPES } from '../src/modules/exports/export-format';
import { route } from './route-table';

const RESOURCE_READ = 'The export also needs the read permission of its resource (`payments:read` for payments, …).';

export const exportRoutes = [
  route.one({
    method: 'POST', path: '/exports', operationId: 'createExport', tag: 'Exports', summary: 'Export a list to a CSV or JSON Lines file',
    description: `${RESOURCE_READ} \`filters\` are the list's query parameters (paging and sorting excluded: the file holds every row that matches, newest first); each is checked as the list checks it, a problem named \`filters.<name>\`. The file is written in the background: poll the export until \`status\` is \`complete\`, then download \`url\`.`,
    permission: 'exports:write', idempotent: 'createExport', body: createExportInput, response: exportSchema, errors: [],
    example: { resource: 'payments', format: 'csv', filters: { status: 'succeeded' } },
    handle: (s, r) => s.exports.create(r.rc, r.body, r.idem),
  }),
  route.list({
    method: 'GET', path: '/exports', operationId: 'listExports', tag: 'Exports', summary: 'List exports (of the resources the key may read)',
    permission: 'exports:read', query: listExportsInput, response: exportSchema, errors: [],
    handle: (s, r) => s.exports.list(r.rc, r.query),
  }),
  route.one({
    method: 'GET', path: '/exports/{id}', operationId: 'retrieveExport', tag: 'Exports', summary: 'Retrieve an export (its status and progress)',
    description: RESOURCE_READ,
    permission: 'exports:read', response: exportSchema, errors: [],
    handle: (s, r) => s.exports.retrieve(r.rc, r.param('id')),
  }),
  route.file({
    method: 'GET', path: '/exports/{id}/file', operationId: 'exportFile', tag: 'Exports', summary: "Download a complete export's file",
    description: `${RESOURCE_READ} CSV (\`text/csv\`, a header row, RFC 4180 quoting, nested objects as JSON text, text starting with = + - @ prefixed with a single quote) or JSON Lines (\`application/x-ndjson\`, one API object per line). Until the export is complete: 409 \`export_not_ready\`; after \`expiresAt\`: 410 \`export_expired\`.`,
    permission: 'exports:read', contentType: EXPORT_CONTENT_TYPES, errors: ['export_not_ready', 'export_expired', 'invalid_state'],
    fileExample: 'id,object,livemode,customerId,amount,currency,…\r\npay_7Hc2kQ9mXz4Lb1,payment,false,cus_3Jq8LmZ2xV9cTb,2500,EUR,…\r\n',
    handle: async (s, r) => {
      const file = await s.exports.file(r.rc, r.param('id'));
      return { filename: file.filename, bytes: file.stream, contentType: file.contentType, length: file.length, attachment: true };
    },
  }),
];
