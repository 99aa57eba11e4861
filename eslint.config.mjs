// ESLint over the TypeScript sources, type-aware (one program from tsconfig.json), with a few
// rules that each find a real bug: a promise nobody awaits or catches, a promise where a
// callback's result is ignored, a switch that misses a member of a union, an await on what is
// not a promise, an interface merged into a class unseen. scripts/lint.sh runs it (`make lint`, and `make test` beside the format check).
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.vm/**', '.k8s/**', '.lab/**', '.image/**', '**/*.js', '**/*.mjs'] },
  {
    files: ['lib/**/*.ts', 'spec/**/*.ts', 'testkit/**/*.ts', 'scripts/**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { project: './tsconfig.json', tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': [
        'error',
        { considerDefaultExhaustiveForUnions: true, requireDefaultForNonUnion: false },
      ],
      '@typescript-eslint/await-thenable': 'error',
      // (lib/netlink/ipvs-observed.ts merges on purpose, and says so where it does)
      '@typescript-eslint/no-unsafe-declaration-merging': 'error',
    },
  },
);
