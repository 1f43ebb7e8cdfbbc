import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { unwrapResolverError } from '@apollo/server/errors';
import { isDomainError } from '../src/core/errors';
import { redactPan } from '../src/core/card';

export const TOO_COMPLEX = 'Query is too complex';

const INVALID_VALUE = 'got invalid value ';

/**
 * Where the value that graphql-js quotes after "got invalid value " ends: past balanced braces
 * and brackets and past string literals (whose text may hold "; " or " at "), at the first
 * top-level "; " or ' at "'.
 */
function endOfQuotedValue(message: string, from: number): number {
  let depth = 0;
  for (let i = from; i < message.length; i++) {
    const c = message[i];
    if (c === '"') {
      for (i++; i < message.length && message[i] !== '"'; i++) if (message[i] === '\\') i++;
    } else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
    else if (depth <= 0 && (message.startsWith('; ', i) || message.startsWith(' at "', i))) return i;
  }
  return message.length;
}

/**
 * GraphQL's own input errors quote the offending value ("got invalid value { number: … }",
 * "cannot represent a non string value: 4242…"), card fields included: keep the path and the
 * reason, never the value.
 */
function withoutValues(message: string): string {
  let out = message;
  for (let at = out.indexOf(INVALID_VALUE); at !== -1; at = out.indexOf(INVALID_VALUE, at + 1)) {
    const start = at + INVALID_VALUE.length;
    out = `${out.slice(0, at)}got an invalid value${out.slice(endOfQuotedValue(out, start))}`;
  }
  return redactPan(out.replace(/(cannot represent[^:]*): [\s\S]*$/, '$1'));
}

/** The GraphQL side of the one error mapping: extensions.code is always a REST code. */
export function formatGraphQLError(formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError {
  let original = unwrapResolverError(error);
  // Raised outside any field (a subscription's stream failing, over WebSocket): wrapped, no path.
  if (original instanceof GraphQLError && !original.path && isDomainError(original.originalError)) original = original.originalError;
  if (isDomainError(original)) {
    const extensions: Record<string, unknown> = { code: original.code };
    if (original.param) extensions.param = original.param;
    return { message: original.message, path: formatted.path, locations: formatted.locations, extensions };
  }
  const apolloCode = formatted.extensions?.code;
  if (typeof formatted.message === 'string' && formatted.message.includes(TOO_COMPLEX)) {
    return { message: formatted.message, locations: formatted.locations, extensions: { code: 'query_too_complex' } };
  }
  if (apolloCode === 'GRAPHQL_PARSE_FAILED' || apolloCode === 'GRAPHQL_VALIDATION_FAILED' || apolloCode === 'BAD_USER_INPUT' || apolloCode === 'BAD_REQUEST') {
    return { message: withoutValues(formatted.message), locations: formatted.locations, extensions: { code: 'invalid_parameter' } };
  }
  // The client's document or variables: a GraphQLError of its own, or (a variable's value
  // refused by its type) one without a path wrapping the type's GraphQLError. Over WebSocket
  // these come without Apollo's codes.
  if (original instanceof GraphQLError && (!original.originalError || (!original.path && original.originalError instanceof GraphQLError))) {
    return { message: withoutValues(formatted.message), locations: formatted.locations, path: formatted.path, extensions: { code: 'invalid_parameter' } };
  }
  return { message: 'An internal error occurred; quote the requestId to support', path: formatted.path, extensions: { code: 'internal_error' } };
}
