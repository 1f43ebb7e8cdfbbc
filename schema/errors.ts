import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { unwrapResolverError } from '@apollo/server/errors';
import { isDomainError } from '../src/core/errors';
import { redactPan } from '../src/core/card';

export const TOO_COMPLEX = 'Query is too complex';

/**
 * GraphQL's own input errors quote the offending value ("got invalid value { number: … }",
 * "cannot represent a non string value: 4242…"): keep the path, never the value.
 */
function withoutValues(message: string): string {
  return redactPan(
    message
      .replace(/got invalid value [\s\S]*?(?=; |\.?$| at ")/g, 'got an invalid value')
      .replace(/(cannot represent[^:]*): [\s\S]*$/, '$1'),
  );
}

/** The GraphQL side of the one error mapping: extensions.code is always a REST code. */
export function formatGraphQLError(formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError {
  const original = unwrapResolverError(error);
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
  if (original instanceof GraphQLError && !original.originalError) {
    return { message: withoutValues(formatted.message), locations: formatted.locations, path: formatted.path, extensions: { code: 'invalid_parameter' } };
  }
  return { message: 'An internal error occurred; quote the requestId to support', path: formatted.path, extensions: { code: 'internal_error' } };
}
