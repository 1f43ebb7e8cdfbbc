import {
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  Kind,
  getDirectiveValues,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLObjectType,
  type OperationDefinitionNode,
  type SelectionNode,
  type SelectionSetNode,
} from 'graphql';

/** Whether `@skip`/`@include` leave a selection in, as at execution; without variables, every one is in. */
export function included(selection: SelectionNode, variables: Record<string, unknown> | undefined): boolean {
  if (!variables) return true;
  if (getDirectiveValues(GraphQLSkipDirective, selection, variables)?.if === true) return false;
  return getDirectiveValues(GraphQLIncludeDirective, selection, variables)?.if !== false;
}

/**
 * The root fields an operation runs, by response key (alias or name), once fragment spreads and
 * inline fragments are expanded, as graphql-js groups them for execution: `mutation { ...R }`
 * with two aliased mutations in `R` runs two. With `variables` (coerced), `@skip`/`@include`
 * decide as at execution; without them every field written counts (an upper bound, for checks
 * made before variables are known).
 */
export function rootFields(
  root: GraphQLObjectType,
  operation: OperationDefinitionNode,
  fragment: (name: string) => FragmentDefinitionNode | undefined | null,
  variables?: Record<string, unknown>,
): Map<string, FieldNode[]> {
  const fields = new Map<string, FieldNode[]>();
  const spread = new Set<string>();
  // A root type implements no interface and belongs to no union here: a condition applies only when it names the root.
  const applies = (typeCondition: { name: { value: string } } | undefined) => !typeCondition || typeCondition.name.value === root.name;
  const collect = (selectionSet: SelectionSetNode) => {
    for (const selection of selectionSet.selections) {
      if (!included(selection, variables)) continue;
      if (selection.kind === Kind.FIELD) {
        const key = (selection.alias ?? selection.name).value;
        fields.set(key, [...(fields.get(key) ?? []), selection]);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        if (applies(selection.typeCondition)) collect(selection.selectionSet);
      } else {
        const name = selection.name.value;
        const definition = fragment(name);
        // Spread once, as at execution (a repeated spread adds nothing); unknown ones are validation's to report.
        if (spread.has(name) || !definition || !applies(definition.typeCondition)) continue;
        spread.add(name);
        collect(definition.selectionSet);
      }
    }
  };
  collect(operation.selectionSet);
  return fields;
}

/** How many mutations (root fields other than `__typename`) an operation runs; see rootFields. */
export function mutationCount(...args: Parameters<typeof rootFields>): number {
  let count = 0;
  for (const nodes of rootFields(...args).values()) if (!nodes[0].name.value.startsWith('__')) count++;
  return count;
}
