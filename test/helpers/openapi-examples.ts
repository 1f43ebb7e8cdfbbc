import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

type Json = Record<string, any>;

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Follows a local `#/components/…` reference (one level at a time, as the document nests them). */
function resolve(doc: Json, node: Json): Json {
  let n: Json | undefined = node;
  while (n && typeof n.$ref === 'string') {
    n = n.$ref.replace(/^#\//, '').split('/').reduce((o: Json | undefined, k: string) => o?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
  }
  return n ?? {};
}

/** Each example of a media type object, by name (`example` as "example"), references resolved. */
function examplesOf(doc: Json, media: Json): Array<[string, unknown]> {
  const out: Array<[string, unknown]> = [];
  if ('example' in media) out.push(['example', media.example]);
  for (const [name, ex] of Object.entries((media.examples ?? {}) as Record<string, Json>)) {
    const resolved = resolve(doc, ex);
    out.push([name, resolved?.value]);
  }
  return out;
}

/**
 * What is wrong with an OpenAPI document's examples: an operation without an example of its
 * request body (when it has one) or of its success answer, and any example of a request or a
 * response (success or error, shared ones included) that its own schema refuses (ajv, JSON
 * Schema 2020-12, with the document's components). Empty when every example is there and valid.
 */
export function exampleProblems(doc: Json): string[] {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  const problems: string[] = [];
  const validators = new Map<string, ReturnType<typeof ajv.compile>>();
  const check = (where: string, schema: Json | undefined, media: Json) => {
    const examples = examplesOf(doc, media);
    if (!schema) return void problems.push(`${where}: no schema`);
    const key = JSON.stringify(schema);
    let validate = validators.get(key);
    if (!validate) validators.set(key, (validate = ajv.compile({ ...schema, components: doc.components })));
    for (const [name, value] of examples) {
      if (value === undefined) problems.push(`${where}: example ${name} has no value`);
      else if (!validate(value)) problems.push(`${where}: example ${name} does not match its schema: ${ajv.errorsText(validate.errors)}`);
    }
    return examples.length;
  };
  for (const [path, item] of Object.entries((doc.paths ?? {}) as Record<string, Json>)) {
    for (const method of HTTP_METHODS) {
      const op = item[method];
      if (!op) continue;
      const name = `${method.toUpperCase()} ${path}`;
      if (op.requestBody) {
        for (const [type, media] of Object.entries((resolve(doc, op.requestBody).content ?? {}) as Record<string, Json>)) {
          if (!check(`${name} request ${type}`, media.schema, media)) problems.push(`${name}: no example of its request body (${type})`);
        }
      }
      let successExamples = 0;
      for (const [status, answer] of Object.entries((op.responses ?? {}) as Record<string, Json>)) {
        for (const [type, media] of Object.entries((resolve(doc, answer).content ?? {}) as Record<string, Json>)) {
          const n = check(`${name} ${status} ${type}`, media.schema, media) ?? 0;
          if (/^2\d\d$/.test(status)) {
            if (n === 0) problems.push(`${name}: no example of its ${status} answer (${type})`);
            successExamples += n;
          }
        }
      }
      if (successExamples === 0) problems.push(`${name}: no example of a success answer`);
    }
  }
  return problems;
}
