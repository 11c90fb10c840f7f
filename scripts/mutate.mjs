// Mutation testing of one core module with StrykerJS (docs/reliability.md, "Mutation testing").
// Usage: npm run mutate -- <module> [--concurrency N] [--no-slower]
//        npm run mutate -- --list
// --no-slower leaves out the module's `slower` test files: a quicker run whose score is a lower
// bound (what the fast suites alone kill); check its survivors against the slower files by hand.
// Stryker copies the repository into .stryker-tmp/, writes every mutant of the module's files into
// the TypeScript source at once (each guarded by __STRYKER_ACTIVE_MUTANT__), compiles the copy with
// tsc once, then runs the module's unit tests once per mutant with that variable set. Tests run
// from the compiled dist/ as everywhere else in the repository, so the command test runner is used
// (no per-test coverage: every mutant runs the module's whole test command, kept small for that).
// Not part of `npm test` or CI: one module takes minutes.
import { mkdirSync } from 'node:fs';

/**
 * Each module: the files mutated, and the test files (compiled, under dist/test) that cover them.
 * `names` narrows a test file to the suites that exercise the module (node --test-name-pattern),
 * so a slow simulation elsewhere in the file does not run once per mutant; its `file` may list
 * several files, run by one node process with the same pattern. `slower` lists test files run by a
 * second node process only when `tests` passed: a fast unit suite first, and the slower suites
 * (a node on RocksDB, fuzzing) only for the mutants the fast one lets through. `timeoutMS` (default
 * 20 s) is what Stryker adds to the measured run time before it calls a mutant hanging.
 */
const MODULES = {
  voteset: {
    mutate: ['libs/consensus/src/voteset.ts'],
    tests: ['dist/test/consensus/voteset.test.js', 'dist/test/consensus/validators.test.js'],
    extra: [
      { file: 'dist/test/consensus/vote-extensions.test.js', names: 'VoteSet|vote extension encodings' },
    ],
  },
  'log-filter': {
    mutate: ['libs/execution/src/chain/log-filter.ts'],
    tests: ['dist/test/execution/log-filter.test.js'],
  },
  // Line ranges keep a big file's run to the code the module is named for; they are line numbers,
  // so move them when those files change (check with --list and the report's first lines).
  'rest-pagination': {
    mutate: ['libs/rpc/src/rest/routes.ts:145-167', 'libs/rpc/src/rest/routes.ts:184-197'],
    tests: ['dist/test/rest/rest.test.js'],
  },
  'config-peers': {
    mutate: ['libs/config/src/values.ts:53-81', 'libs/config/src/values.ts:121-163'],
    tests: ['dist/test/config/p2p.test.js'],
  },
  // The rest of the config rules, in two runs of a few minutes each. config-values: the value
  // shapes (durations, listen and external addresses, integers, integer strings, BTC amounts, node
  // URLs, name lists) and the class-validator rules every key of the three TOML files is declared
  // with (values.ts without the peer-list ranges of config-peers). config-cross: the loader's
  // checks across keys and files (gas prices, mempool sizes, archive pruning, the API address, TLS,
  // the bridge, the light client, port clashes) and the section machinery (unknown keys and their
  // suggestion, a bad value reported once and replaced by its default).
  'config-values': {
    mutate: [
      'libs/config/src/values.ts:1-51',
      'libs/config/src/values.ts:83-120',
      'libs/config/src/values.ts:165-179',
      'libs/config/src/schema/rules.ts',
    ],
    tests: ['dist/test/config/values.test.js'],
    slower: [
      'dist/test/config/schema.test.js',
      'dist/test/config/p2p.test.js',
      'dist/test/config/light.test.js',
      'dist/test/config/bridge.test.js',
    ],
  },
  'config-cross': {
    mutate: [
      'libs/config/src/load.ts:149-345',
      'libs/config/src/load.ts:393-419',
      'libs/config/src/schema/section.ts:13-106',
    ],
    tests: ['dist/test/config/cross.test.js'],
    slower: [
      'dist/test/config/schema.test.js',
      'dist/test/config/light.test.js',
      'dist/test/config/bridge.test.js',
      'dist/test/config/env.test.js',
    ],
  },
  // The consensus engine's upon-rules (the paper's L22-L55: progress, applyRoundRules, tryDecide),
  // driven through step() by the engine's rule-by-rule suite (1-2 s); the simulations that also
  // drive it take minutes and are left out.
  'engine-rules': {
    mutate: ['libs/consensus/src/engine/engine.ts:818-938'],
    tests: ['dist/test/consensus/engine.test.js'],
  },
  // The engine's event handlers, in two runs. engine-handlers: step()'s dispatch and the handlers
  // of start, timeouts, proposals (a peer's and its own), block validation and votes (lines
  // 138-181, 270-463). engine-commit: a peer's commit certificate, transactions available, the
  // proposal's transactions, the committed block and the next height, the last commit and its
  // extensions, and the transitions (timeouts, StartRound, Propose, votes; lines 464-817). Both
  // by the engine's rule-by-rule and handler suites (1-2 s); the extension suites for the second.
  'engine-handlers': {
    mutate: ['libs/consensus/src/engine/engine.ts:138-181', 'libs/consensus/src/engine/engine.ts:270-463'],
    tests: ['dist/test/consensus/engine.test.js', 'dist/test/consensus/engine-handlers.test.js'],
  },
  'engine-commit': {
    mutate: ['libs/consensus/src/engine/engine.ts:464-817'],
    tests: ['dist/test/consensus/engine.test.js', 'dist/test/consensus/engine-handlers.test.js'],
    extra: [{ file: 'dist/test/consensus/vote-extensions.test.js', names: 'engine with vote extensions' }],
  },
  // What a peer is missing, in two runs. gossip: the engine's gossip queries (the proposer of a
  // round, its own votes and the POL prevotes re-sent, the status with its vote bits, what a
  // peer's status lacks and the catch-up of a peer rounds behind; engine.ts lines 183-268).
  // consensus-parts: the consensus channel's frames, heads and block parts, the part-set
  // bookkeeping per peer and its byte budget; its frame suite drives the channel over an in-memory
  // host first, the suite over real hosts only for what that lets through. A mutant that loops in
  // the budget's drop loop hangs: 5 s beyond the measured run time calls it.
  gossip: {
    mutate: ['libs/consensus/src/engine/engine.ts:183-268'],
    tests: ['dist/test/consensus/gossip.test.js'],
  },
  'consensus-parts': {
    mutate: ['libs/p2p/src/consensus-channel.ts'],
    tests: ['dist/test/p2p/consensus-frames.test.js'],
    slower: ['dist/test/p2p/consensus-channel.test.js'],
    timeoutMS: 5000,
  },
  'fee-market': {
    mutate: ['libs/execution/src/feeMarket.ts'],
    tests: ['dist/test/execution/feemarket.test.js'],
  },
  // The query's own suite first; the fuzz suite only for what it lets through. A mutant that loops
  // in the tokenizer hangs the suite: 5 s beyond the measured run time calls it (1 s unloaded).
  'comet-query': {
    mutate: ['libs/rpc/src/comet/query.ts'],
    tests: ['dist/test/rpc-comet/query.test.js'],
    slower: ['dist/test/fuzz/comet-query.test.js'],
    timeoutMS: 5000,
  },
  // The WAL's and the signer's own suites, plus the other suites that go through them: the WAL
  // reader's fuzz tests and regressions, the extension votes' WAL round trip, the runtime's restart
  // from its WAL and signer state. One node process each (test names matched across the files).
  wal: {
    mutate: ['libs/consensus/src/wal.ts'],
    tests: [],
    extra: [
      {
        file: [
          'dist/test/consensus/wal-privval.test.js',
          'dist/test/consensus/wal-privval-edges.test.js',
          'dist/test/fuzz/wal.test.js',
          'dist/test/fuzz/regressions.test.js',
          'dist/test/consensus/vote-extensions.test.js',
          'dist/test/consensus/runtime.test.js',
        ],
        names: 'WAL',
      },
    ],
  },
  privval: {
    mutate: ['libs/consensus/src/privval.ts'],
    tests: [],
    extra: [
      {
        file: [
          'dist/test/consensus/wal-privval.test.js',
          'dist/test/consensus/wal-privval-edges.test.js',
          'dist/test/consensus/vote-extensions.test.js',
          'dist/test/consensus/runtime.test.js',
        ],
        names: 'FilePV|signer',
      },
    ],
  },
  // The pool itself: admission rules, eviction, pending/queued, proposal order; its own suite and
  // the executor's CheckTx and PrepareProposal over it (a node on a temporary RocksDB, 2-4 s).
  mempool: {
    mutate: ['libs/execution/src/mempool.ts'],
    tests: ['dist/test/execution/mempool-pool.test.js'],
    slower: ['dist/test/execution/mempool.test.js'],
  },
  // Decoding and stateless validation of raw transactions (decodeTx and the checks before the
  // pool's: checkStateless, checkTxFeeCap; a plain transfer's decode without the EthereumJS object,
  // decodeSimple). The TxCode table (data) is left out, and the RPC
  // thread's sender recovery is its own module, tx-sender.
  txs: {
    mutate: ['libs/execution/src/txs.ts:98-514'],
    tests: ['dist/test/execution/txs.test.js'],
    slower: ['dist/test/execution/mempool.test.js', 'dist/test/fuzz/txs.test.js'],
    extra: [{ file: 'dist/test/fuzz/regressions.test.js', names: 'transaction decoding' }],
  },
  // A plain transfer decoded without the EthereumJS object (simpleRules, decodeSimple): the
  // differential property of the fuzz suite holds it to the eager decode, field by field.
  'tx-plain': {
    mutate: ['libs/execution/src/txs.ts:346-462'],
    tests: ['dist/test/fuzz/txs.test.js', 'dist/test/execution/txs.test.js'],
  },
  // recoverSenderPublicKey: the sender's key from raw bytes without an EthereumJS object (the
  // JSON-RPC thread), and its agreement with decodeTx (the fuzz suite).
  'tx-sender': {
    mutate: ['libs/execution/src/txs.ts:516-579'],
    tests: ['dist/test/execution/sender.test.js', 'dist/test/fuzz/txs.test.js'],
  },
  'comet-body-limit': {
    mutate: ['libs/rpc/src/comet/server.ts:75-104'],
    tests: [],
    extra: [
      {
        file: 'dist/test/rpc-comet/http.test.js',
        names: 'max_body_bytes|chunked body|malformed requests|drops its connection',
      },
    ],
  },
};

function usage(code) {
  console.error(
    `usage: npm run mutate -- <module> [--concurrency N] [--no-slower]\nmodules: ${Object.keys(MODULES).join(', ')}`,
  );
  process.exit(code);
}

const args = process.argv.slice(2);
if (args.includes('--list')) {
  for (const [name, m] of Object.entries(MODULES)) console.log(`${name}: ${m.mutate.join(' ')}`);
  process.exit(0);
}
const name = args.find((a) => !a.startsWith('--') && !/^\d+$/.test(a));
if (!name) usage(2);
const mod = MODULES[name];
if (!mod) {
  console.error(`unknown module "${name}"`);
  usage(2);
}
const ci = args.indexOf('--concurrency');
const concurrency = ci >= 0 ? Number(args[ci + 1]) : 1;
if (!Number.isInteger(concurrency) || concurrency < 1) {
  console.error(`--concurrency must be a positive integer, got "${args[ci + 1]}"`);
  process.exit(2);
}

// One `node --test` per group of files; directories in `tests` are expanded by run-tests.mjs.
const commands = [];
const plain = mod.tests.filter((t) => t.endsWith('.js'));
const dirs = mod.tests.filter((t) => !t.endsWith('.js'));
if (plain.length > 0) commands.push(`node --test --test-concurrency=1 ${plain.join(' ')}`);
if (dirs.length > 0)
  commands.push(`node scripts/run-tests.mjs ${dirs.map((d) => d.replace(/^dist\//, '')).join(' ')}`);
if ((mod.slower ?? []).length > 0 && !args.includes('--no-slower'))
  commands.push(`node --test --test-concurrency=1 ${mod.slower.join(' ')}`);
for (const e of mod.extra ?? [])
  commands.push(
    `node --test --test-concurrency=1 --test-name-pattern="${e.names}" ${[e.file].flat().join(' ')}`,
  );

const files = [...new Set(mod.mutate.map((m) => m.replace(/:\d+-\d+$/, '')))];
const { Stryker } = await import('@stryker-mutator/core');
mkdirSync('reports/mutation', { recursive: true });
const stryker = new Stryker({
  mutate: mod.mutate,
  testRunner: 'command',
  commandRunner: { command: commands.join(' && ') },
  buildCommand: 'npm run build',
  // Stryker would rewrite tsconfig.json's extends/references through the TypeScript JS API, which
  // TypeScript 7 (native) no longer has; ours has neither, so point that step at no file.
  tsconfigFile: 'tsconfig.stryker-skip.json',
  coverageAnalysis: 'off',
  concurrency,
  // The sandbox gets its own dist/ from buildCommand; reports and earlier sandboxes stay out.
  ignorePatterns: ['dist', 'reports', '.localnet', 'bench/results', '.tmp'],
  // Instrumented files carry // @ts-nocheck so tsc emits them; only the mutated files need it.
  disableTypeChecks: files.length === 1 ? files[0] : `{${files.join(',')}}`,
  reporters: ['clear-text', 'progress', 'json', 'html'],
  jsonReporter: { fileName: `reports/mutation/${name}.json` },
  htmlReporter: { fileName: `reports/mutation/${name}.html` },
  clearTextReporter: { allowColor: false, logTests: false, reportMutants: true },
  timeoutMS: mod.timeoutMS ?? 20000,
  tempDirName: '.stryker-tmp',
  cleanTempDir: true,
});
const results = await stryker.runMutationTest();
const count = (s) => results.filter((r) => r.status === s).length;
const killed = count('Killed') + count('Timeout');
const survived = count('Survived') + count('NoCoverage');
const valid = killed + survived;
console.log(
  `${name}: ${results.length} mutants, ${killed} killed (${count('Timeout')} by timeout), ${survived} survived, ` +
    `${count('CompileError') + count('RuntimeError')} errors; score ${valid === 0 ? 'n/a' : ((100 * killed) / valid).toFixed(2)}%`,
);
