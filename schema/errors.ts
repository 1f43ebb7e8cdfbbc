import { GraphQLError, Kind, parse, visit, type ASTNode, type GraphQLFormattedError, type ValueNode } from 'graphql';
import { unwrapResolverError } from '@apollo/server/errors';
import { DomainError, isDomainError } from '../src/core/errors';
import { redactQuoted } from '../src/core/card';

const TOO_COMPLEX = 'Query is too complex';

/** Our own size limits' refusal (depth, cost, result size). Recognised by class, never by text the client could also send. */
export class TooComplexError extends GraphQLError {
  constructor(reason: string, nodes?: readonly ASTNode[]) {
    super(`${TOO_COMPLEX}: ${reason}`, { nodes });
  }
}

/** The parser's own refusal at its token limit; anchored, so no client text quoted in another syntax error can pass for it. */
const TOKEN_LIMIT = /^Syntax Error: Document contains more tha[nt] (\d+) tokens\. Parsing aborted\.$/; // graphql 16 says "more that"

/** A RangeError (stack exhausted) anywhere in the wrapping chain Apollo builds around a parse failure. */
function outOfStack(error: unknown): boolean {
  for (let e = error, i = 0; e instanceof Error && i < 4; e = (e as { originalError?: unknown }).originalError, i++) {
    if (e instanceof RangeError) return true;
  }
  return false;
}

function isTooComplex(error: unknown): boolean {
  return error instanceof TooComplexError || (error instanceof GraphQLError && error.originalError instanceof TooComplexError);
}

const GRAPHQL_NAME = /^[_A-Za-z][_0-9A-Za-z]*$/;

/** Other graphql-js and Apollo messages that quote text the client chose, each with what stays. */
function withoutQuotedInput(message: string): string {
  const field = /^Field "([\s\S]*)" is not defined by type "(\w+)"\.([\s\S]*)$/.exec(message);
  if (field && !GRAPHQL_NAME.test(field[1])) return `A field that is not a GraphQL name is not defined by type "${field[2]}".`;
  return message
    .replace(/^(Syntax Error: Unexpected [A-Za-z ]+?) "[\s\S]*"\.?$/, '$1.')
    .replace(/^Unknown operation named "[\s\S]*"\.?$/, 'Unknown operation name.')
    .replace(/^Value "[\s\S]*" does not exist in "(\w+)" enum\.?[\s\S]*$/, 'The value does not exist in the "$1" enum.');
}

/** What a scalar says after refusing a value: "String cannot represent a non string value: 4242…". */
function withoutScalarValue(message: string): string {
  return message.replace(/(cannot represent[^:]*): [\s\S]*$/, '$1');
}

/**
 * GraphQL's own input errors print the value they refused, card fields included, and a printed
 * value cannot be told apart from the text around it (object keys are printed unquoted, so a
 * metadata key can imitate any punctuation). So the value is never cut out of the message: the
 * message is rebuilt from the parts graphql-js assembled it from, or cut where the value starts.
 * - `Variable "$v" got invalid value <value> [at "<path>"]; <reason>`: the reason is the wrapped
 *   error's own message, so it is known exactly and the path sits just before it.
 * - `Argument "a" has invalid value <value>.` and `Expected value of type "T", found <value>…`:
 *   everything from the value on is dropped.
 */
function withoutValues(message: string, error: unknown): string {
  const variable = variableParts(message, error);
  if (variable) {
    const where = variable.path ? ` at "${variable.path}"` : '';
    const { reason } = variable;
    return redactQuoted(`Variable "$${variable.name}" got an invalid value${where}${reason ? `; ${withoutScalarValue(withoutValues(reason, undefined))}` : ''}`);
  }
  const argument = message.indexOf(' has invalid value ');
  if (argument !== -1) return redactQuoted(`${message.slice(0, argument)} has an invalid value.`);
  const found = message.indexOf(', found ');
  if (found !== -1) {
    // A scalar's own reason (our event-type scalars say what they take) follows the value after "; ".
    const reason = reasonOf(message, error);
    return redactQuoted(`${message.slice(0, found)}, found an invalid value${reason ? `; ${withoutScalarValue(reason)}` : ''}.`);
  }
  return redactQuoted(withoutQuotedInput(withoutScalarValue(message)));
}

/**
 * The parts of `Variable "$v" got invalid value <value> [at "<path>"]; <reason>` that are not the
 * value: the reason is the wrapped error's own message, so it is known exactly and the path sits
 * just before it.
 */
function variableParts(message: string, error: unknown): { name: string; path: string | null; reason: string } | null {
  const variable = /^Variable "\$(\w+)" got invalid value /.exec(message);
  if (!variable) return null;
  const reason = reasonOf(message, error);
  const prefix = reason ? message.slice(0, -(reason.length + 2)) : '';
  const path = / at "([\w.[\]]+)"$/.exec(prefix);
  return { name: variable[1], path: path ? path[1] : null, reason };
}

type InputCode = 'invalid_parameter' | 'unknown_parameter' | 'missing_parameter';

/** Longer than any field path of the schema: a name this long is the client's text, not a field. */
const MAX_PARAM_LENGTH = 200;

/**
 * `a.b` + `c` → `a.b.c`; only GraphQL names (a key that is not one may be anything). A name can
 * still be card digits after a letter, so the caller redacts the result like any quoted text.
 */
function joinParam(base: string | undefined, name: string): string | undefined {
  if (!GRAPHQL_NAME.test(name)) return undefined;
  return base ? `${base}.${name}` : name;
}

/**
 * graphql-js's "unknown input field" message, whole: the name, the type and the suggestions it
 * may add (schema names only). Anchored, so a key quoting the message itself does not match.
 */
const DID_YOU_MEAN = String.raw`(?: Did you mean (?:"\w+"(?:, or |, | or )?)+\?)?`;
const UNKNOWN_FIELD = new RegExp(String.raw`^Field "(\w+)" is not defined by type "\w+"\.${DID_YOU_MEAN}$`);
const UNKNOWN_ODD_FIELD = new RegExp(String.raw`^Field "[\s\S]*" is not defined by type "\w+"\.${DID_YOU_MEAN}$`);

/** An unknown input field: its name when it is a GraphQL name, else none (it may be anything). */
function unknownInputField(message: string): { name?: string } | null {
  const named = UNKNOWN_FIELD.exec(message);
  if (named) return { name: named[1] };
  return UNKNOWN_ODD_FIELD.test(message) ? {} : null;
}

/**
 * The REST code and `param` of an input error graphql-js raised, as REST gives them for the same
 * mistake in a body: a field the type does not have is `unknown_parameter`, a required one left
 * out `missing_parameter`, anything else `invalid_parameter`. `param` is the field's path inside
 * the argument (`card.expMonth`, as a service names it), or the variable or argument itself.
 */
function inputErrorCode(message: string, error: unknown): { code: InputCode; param?: string } {
  const variable = variableParts(message, error);
  if (variable) {
    // The path starts with the variable's name: `input.card.x` is `card.x` inside the argument.
    const rest = variable.path?.slice(variable.name.length) ?? '';
    const base = rest.startsWith('.') ? rest.slice(1) : rest ? `${variable.name}${rest}` : undefined;
    const unknown = unknownInputField(variable.reason);
    if (unknown) return { code: 'unknown_parameter', param: unknown.name === undefined ? undefined : joinParam(base, unknown.name) };
    const missing = /^Field "(\w+)" of required type "[^"]+" was not provided\.$/.exec(variable.reason);
    if (missing) return { code: 'missing_parameter', param: joinParam(base, missing[1]) };
    return { code: 'invalid_parameter', param: base ?? variable.name };
  }
  const unprovidedVariable = /^Variable "\$(\w+)" of required type "[^"]+" was not provided\.$/.exec(message);
  if (unprovidedVariable) return { code: 'missing_parameter', param: unprovidedVariable[1] };
  // Written in the document itself (validation): the field or argument by name.
  const missingField = /^Field "\w+\.(\w+)" of required type "[^"]+" was not provided\.$/.exec(message);
  if (missingField) return { code: 'missing_parameter', param: joinParam(insideArgument(literalPath(error)), missingField[1]) };
  const missingArgument = /^Field "\w+" argument "(\w+)" of type "[^"]+" is required, but it was not provided\.$/.exec(message);
  if (missingArgument) return { code: 'missing_parameter', param: missingArgument[1] };
  const unknownArgument = new RegExp(String.raw`^Unknown argument "(\w+)" on field "\w+\.\w+"\.${DID_YOU_MEAN}$`).exec(message);
  if (unknownArgument) return { code: 'unknown_parameter', param: unknownArgument[1] };
  // (Only input objects say this; a selection of an unknown field is "Cannot query field".)
  const unknownField = unknownInputField(message);
  if (unknownField) return { code: 'unknown_parameter', param: unknownField.name === undefined ? undefined : insideArgument(literalPath(error)) ?? unknownField.name };
  // A literal of the wrong type or value: its path, or the argument it is.
  const literal = literalPath(error);
  return { code: 'invalid_parameter', param: literal ? insideArgument(literal) ?? literal[0] : undefined };
}

/** A literal's place: its own segment (`card`, `[1]`) under its parent's (an argument's has none). */
interface LiteralPlace { segment: string; parent?: LiteralPlace }

/**
 * Where in the document a literal the validator refused sits, as the variable path of the same
 * value would read: the argument, then fields and list positions (`input.card`, `rates[1]`).
 * A variable is not a literal: its own errors name the variable.
 */
function literalPath(error: unknown): string[] | undefined {
  const node = error instanceof GraphQLError ? error.nodes?.[0] : undefined;
  if (!node?.loc || !(error instanceof GraphQLError) || !error.source || node.kind === Kind.VARIABLE) return undefined;
  let place = literalIndex(error)?.get(`${node.kind}:${node.loc.start}`);
  const segments: string[] = [];
  for (; place; place = place.parent) segments.unshift(place.segment);
  if (segments.length === 0) return undefined;
  // `[i]` belongs to the segment before it: `rates`, `[1]` → `rates[1]`.
  return segments.reduce<string[]>((path, segment) => {
    if (segment.startsWith('[') && path.length > 0) path[path.length - 1] += segment;
    else path.push(segment);
    return path;
  }, []);
}

/**
 * Every literal of the document by kind and position, each linked to its parent, built once
 * per document however many of its errors ask (graphql-js reports up to 100), in time linear in
 * its size. Null when the source does not parse or nests past the stack.
 */
const LITERALS = new WeakMap<object, Map<string, LiteralPlace> | null>();
function literalIndex(error: GraphQLError): Map<string, LiteralPlace> | undefined {
  const source = error.source as object;
  if (!LITERALS.has(source)) {
    let index: Map<string, LiteralPlace> | null = new Map();
    const places = index;
    const mark = (n: ASTNode, place: LiteralPlace) => {
      if (n.loc) places.set(`${n.kind}:${n.loc.start}`, place);
    };
    try {
      visit(parse(error.source?.body ?? ''), {
        Argument(argument) {
          const stack: Array<[ValueNode, LiteralPlace]> = [[argument.value, { segment: argument.name.value }]];
          while (stack.length > 0) {
            const [value, place] = stack.pop() as [ValueNode, LiteralPlace];
            mark(value, place);
            if (value.kind === Kind.OBJECT) {
              for (const field of value.fields) {
                const fieldPlace = { segment: field.name.value, parent: place };
                mark(field, fieldPlace);
                stack.push([field.value, fieldPlace]);
              }
            } else if (value.kind === Kind.LIST) {
              value.values.forEach((item, i) => stack.push([item, { segment: `[${i}]`, parent: place }]));
            }
          }
          return false; // its values are indexed; nothing below an argument is another argument
        },
      });
    } catch {
      index = null;
    }
    LITERALS.set(source, index);
  }
  return LITERALS.get(source) ?? undefined;
}

/**
 * A literal's path inside its argument (`card` for `input.card`), as a variable's is given; a
 * list argument keeps its name (`rates[1]`), as REST's body field of the same name does.
 */
function insideArgument(path: string[] | undefined): string | undefined {
  if (!path) return undefined;
  if (path[0].includes('[')) return path.join('.');
  return path.length > 1 ? path.slice(1).join('.') : undefined;
}

/** The message of the error (wrapped at any depth) that `message` ends with after "; ". */
function reasonOf(message: string, error: unknown): string {
  for (let c = error instanceof GraphQLError ? error.originalError : undefined; c; c = c instanceof GraphQLError ? c.originalError : undefined) {
    if (message.endsWith(`; ${c.message}`)) return c.message;
  }
  return '';
}

/**
 * The client's document or variables, as opposed to a failure on our side.
 * - Raised during execution (it has a path): judged by what was thrown. An argument refused at
 *   execution points into the document (it has locations). A value our resolver returned that its
 *   type refuses (output coercion), or a GraphQLError a resolver or library threw, does not.
 * - Raised before execution: parse and validation errors, and operation selection errors, which
 *   wrap nothing. A variable's refused value is also the client's: it points at the variable and
 *   wraps the type's own GraphQLError. A subscription stream failing over graphql-ws is wrapped
 *   without locations, so it is ours.
 */
function clientDocumentError(error: unknown): boolean {
  if (!(error instanceof GraphQLError)) return false;
  const points = (e: GraphQLError) => (e.locations?.length ?? 0) > 0 || (e.nodes?.length ?? 0) > 0;
  if (error.path) return error.originalError instanceof GraphQLError && !error.originalError.originalError && points(error.originalError);
  if (!error.originalError) return true;
  return error.originalError instanceof GraphQLError && points(error);
}

/**
 * A parent looked up by a field argument (`paymentId`, `customerId`) that does not exist: the
 * services name the REST path's `id`, GraphQL names the argument the caller wrote.
 */
export async function notFoundAs<T>(argument: string, resource: string, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    // Only the parent's own absence: another object missing later in the same work keeps its param.
    if (isDomainError(err) && err.code === 'resource_not_found' && err.param === 'id' && err.message.startsWith(`No such ${resource}: `)) {
      throw new DomainError(err.code, err.message, argument);
    }
    throw err;
  }
}

/** The GraphQL side of the one error mapping: extensions.code is always a REST code. */
export function formatGraphQLError(formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError {
  let original = unwrapResolverError(error);
  // Raised outside any field (a subscription's stream failing, over WebSocket): wrapped, no path.
  if (original instanceof GraphQLError && !original.path && isDomainError(original.originalError)) original = original.originalError;
  if (isDomainError(original)) {
    const extensions: Record<string, unknown> = { code: original.code };
    if (original.param) extensions.param = redactQuoted(original.param);
    return { message: redactQuoted(original.message), path: formatted.path, locations: formatted.locations, extensions };
  }
  const apolloCode = formatted.extensions?.code;
  if (isTooComplex(error)) {
    return { message: formatted.message, locations: formatted.locations, extensions: { code: 'query_too_complex' } };
  }
  const tokens = TOKEN_LIMIT.exec(formatted.message);
  if (tokens && !formatted.path) {
    return { message: `${TOO_COMPLEX}: the document has more than ${tokens[1]} tokens`, extensions: { code: 'query_too_complex' } };
  }
  // The parser ran out of stack (Apollo wraps the RangeError): nesting within the token limit but too deep to read.
  if (!formatted.path && outOfStack(error)) {
    return { message: `${TOO_COMPLEX}: the document nests too deeply to be read`, extensions: { code: 'query_too_complex' } };
  }
  if (
    apolloCode === 'GRAPHQL_PARSE_FAILED' || apolloCode === 'GRAPHQL_VALIDATION_FAILED' || apolloCode === 'BAD_USER_INPUT' || apolloCode === 'BAD_REQUEST'
    || apolloCode === 'OPERATION_RESOLUTION_FAILURE' || clientDocumentError(error)
  ) {
    const { code, param } = inputErrorCode(formatted.message, error);
    // Redacted like every other quoted text (a name like `n4242…` is a GraphQL name), and only
    // when it can be a field path at all.
    const extensions: Record<string, unknown> = param && param.length <= MAX_PARAM_LENGTH ? { code, param: redactQuoted(param) } : { code };
    return { message: withoutValues(formatted.message, error), locations: formatted.locations, path: formatted.path, extensions };
  }
  return { message: 'An internal error occurred; quote the requestId to support', path: formatted.path, extensions: { code: 'internal_error' } };
}
