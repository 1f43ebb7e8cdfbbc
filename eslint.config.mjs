// `npm run lint`: type-aware checks that matter for money code, and the layout the code already
// has. `npm run lint:fix` rewrites what can be rewritten safely (the layout, mostly).
import stylistic from '@stylistic/eslint-plugin';
import tseslint from 'typescript-eslint';

// Not the whole recommendedTypeChecked set: most of it is about `any` (the no-unsafe-* rules, over
// 4,000 findings here, mostly Sequelize rows and parsed JSON) and style, which say nothing about
// whether money moves correctly. These rules catch defects, and the code passes them.
const correctness = {
  // A promise nobody awaits can fail unseen (a charge, a refund, an outbox write), and its
  // rejection, unhandled, ends the process. Await it; or, when nothing should wait for it, `void`
  // it with a comment saying why, and make sure its failure is caught and logged.
  '@typescript-eslint/no-floating-promises': 'error',
  // A promise where a plain value is expected: an async callback handed to an event emitter or to
  // forEach (nobody waits for it or sees it fail), `if (promise)` (always true).
  '@typescript-eslint/no-misused-promises': 'error',
  // A switch over a union (a status, a kind) names every member, even when it has a `default`: a
  // member added later fails the lint at each switch that does not handle it, instead of falling
  // into a default written before it existed.
  '@typescript-eslint/switch-exhaustiveness-check': 'error',
  // `await` on something that is not a promise: a misunderstanding of what the callee does.
  '@typescript-eslint/await-thenable': 'error',
  // Inside try/catch/finally, `return promise` without await escapes the catch, and the finally
  // (a lease released, a lock dropped) runs before the work is done.
  '@typescript-eslint/return-await': ['error', 'in-try-catch'],
  // `+` with a string on one side concatenates: '10' + 5 is '105'.
  '@typescript-eslint/restrict-plus-operands': 'error',
  // The error handling (errorForLog, the HTTP and GraphQL error mapping) expects Error objects.
  '@typescript-eslint/only-throw-error': 'error',
  'no-async-promise-executor': 'error',
  'no-fallthrough': 'error',
  // An unused value is often a result that was meant to be checked, or a leftover. `_name` marks
  // one left out on purpose (a field dropped by destructuring, a parameter a signature requires).
  '@typescript-eslint/no-unused-vars': ['error', {
    argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true,
  }],
  '@typescript-eslint/no-unused-expressions': 'error',
  // Not require-await: about 80 async functions have no await, most of them implementing an
  // interface that returns a promise. Dropping their `async` turns a throw into an exception at
  // the call site instead of a rejected promise: a riskier change than what the rule finds.
};

// The layout the code already follows, so `lint:fix` keeps new code like the old. Not Prettier:
// set as close to this code as it goes (single quotes, trailing commas, 200 columns), it still
// rewrites 297 of the 476 TypeScript files (about 14,000 lines), because this code breaks long
// lines by hand where they read best and Prettier decides every break itself.
const layout = {
  '@stylistic/indent': ['error', 2, {
    SwitchCase: 1,
    // The HTML in the pages' template literals is laid out as HTML, not as code.
    ignoredNodes: ['TemplateLiteral *'],
  }],
  '@stylistic/quotes': ['error', 'single', { avoidEscape: true, allowTemplateLiterals: 'always' }],
  '@stylistic/semi': ['error', 'always'],
  '@stylistic/semi-spacing': 'error',
  '@stylistic/semi-style': 'error',
  '@stylistic/no-extra-semi': 'error',
  '@stylistic/comma-dangle': ['error', 'always-multiline'],
  '@stylistic/comma-spacing': 'error',
  '@stylistic/comma-style': 'error',
  '@stylistic/no-trailing-spaces': 'error',
  '@stylistic/eol-last': 'error',
  '@stylistic/no-multiple-empty-lines': ['error', { max: 1, maxEOF: 0, maxBOF: 0 }],
  '@stylistic/no-tabs': 'error',
  '@stylistic/linebreak-style': 'error',
  '@stylistic/brace-style': ['error', '1tbs', { allowSingleLine: true }],
  '@stylistic/padded-blocks': ['error', 'never'],
  '@stylistic/block-spacing': 'error',
  '@stylistic/keyword-spacing': 'error',
  '@stylistic/space-before-blocks': 'error',
  '@stylistic/space-before-function-paren': ['error', { anonymous: 'always', named: 'never', asyncArrow: 'always' }],
  '@stylistic/space-infix-ops': 'error',
  '@stylistic/space-unary-ops': 'error',
  '@stylistic/space-in-parens': 'error',
  '@stylistic/no-multi-spaces': 'error',
  '@stylistic/no-whitespace-before-property': 'error',
  '@stylistic/key-spacing': 'error',
  '@stylistic/computed-property-spacing': 'error',
  '@stylistic/template-curly-spacing': 'error',
  '@stylistic/rest-spread-spacing': 'error',
  '@stylistic/arrow-parens': ['error', 'always'],
  '@stylistic/arrow-spacing': 'error',
  '@stylistic/generator-star-spacing': ['error', { before: false, after: true }],
  '@stylistic/function-call-spacing': 'error',
  '@stylistic/switch-colon-spacing': 'error',
  '@stylistic/dot-location': ['error', 'property'],
  '@stylistic/new-parens': 'error',
  '@stylistic/no-floating-decimal': 'error',
  '@stylistic/spaced-comment': ['error', 'always', { markers: ['/'] }],
  '@stylistic/member-delimiter-style': 'error',
  '@stylistic/type-annotation-spacing': 'error',
  '@stylistic/type-generic-spacing': 'error',
  '@stylistic/type-named-tuple-spacing': 'error',
};

export default tseslint.config(
  // examples/payorch-api.d.ts is generated by openapi-typescript (scripts/client-types.ts).
  { ignores: ['dist/', 'data/', 'coverage/', '.bench-data/', '.dist-*/', 'webhook-quickstart/', 'examples/*.d.ts'] },
  { linterOptions: { reportUnusedDisableDirectives: 'error' } },
  {
    files: ['{src,rest,schema,workers,test,bench,scripts,examples}/**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      // Types from tsconfig.json, which includes every folder linted here.
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin, '@stylistic': stylistic },
    rules: { ...correctness, ...layout },
  },
  {
    // The few JavaScript files (scripts, bin, examples, configs): layout only.
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { sourceType: 'commonjs', ecmaVersion: 2022 },
    plugins: { '@stylistic': stylistic },
    rules: layout,
  },
  { files: ['**/*.mjs'], languageOptions: { sourceType: 'module' } },
);
