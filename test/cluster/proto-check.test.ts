// scripts/proto-check.mjs (`npm run proto:check`, part of `npm run lint`): the lint and the
// breaking-change check of the gRPC contracts. It passes on the real files against the committed
// baseline; then each mutation below is applied to a temporary copy of libs/proto/proto and checked
// against the real libs/proto/baseline.json, and the checker must refuse it with the rule and the
// message that name file:line and what is wrong (or, for additions, accept it).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'scripts', 'proto-check.mjs'))) {
    const up = dirname(dir);
    assert.notEqual(up, dir, 'scripts/proto-check.mjs not found above the test');
    dir = up;
  }
  return dir;
}

const ROOT = repoRoot();
const BASELINE = join(ROOT, 'libs/proto/baseline.json');
const work = mkdtempSync(join(tmpdir(), 'noded-proto-check-'));
after(() => rmSync(work, { recursive: true, force: true }));

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
  /** The finding lines ("<dir>/<file>:<line>: RULE: message"), without the summary line. */
  findings: string[];
}

function check(protoDir: string, ...args: string[]): Run {
  const r = spawnSync(
    process.execPath,
    [join(ROOT, 'scripts/proto-check.mjs'), '--proto-dir', protoDir, ...args],
    {
      cwd: work,
      encoding: 'utf8',
      timeout: 30_000,
    },
  );
  const findings = r.stderr.split('\n').filter((l) => l !== '' && !l.startsWith('proto-check:'));
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, findings };
}

let copies = 0;
/** A fresh copy of the contracts (its directory name relative to `work`, as the checker prints it). */
function copy(): string {
  const name = `proto${++copies}`;
  cpSync(join(ROOT, 'libs/proto/proto'), join(work, name), { recursive: true });
  return name;
}

/** Replaces `from` (which must occur exactly once) in a copied file; returns the new text. */
function edit(dir: string, file: string, from: string, to: string): string {
  const path = join(work, dir, file);
  const text = readFileSync(path, 'utf8');
  assert.equal(text.split(from).length, 2, `${file} must contain "${from}" exactly once`);
  const out = text.replace(from, to);
  writeFileSync(path, out);
  return out;
}

/** The 1-based line of the first line of `text` that contains `needle`. */
function lineOf(text: string, needle: string): number {
  const i = text.split('\n').findIndex((l) => l.includes(needle));
  assert.ok(i >= 0, `"${needle}" not found`);
  return i + 1;
}

const ABCI = 'noded/abci/v1/abci.proto';
const MEMPOOL = 'noded/mempool/v1/mempool.proto';
const HEALTH = 'grpc/health/v1/health.proto';

describe('proto-check: the lint and breaking-change check of libs/proto/proto', () => {
  it('passes on the committed contracts against the committed baseline', () => {
    const r = spawnSync(process.execPath, [join(ROOT, 'scripts/proto-check.mjs')], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /proto-check: 7 files, 7 packages: lint and breaking clean/);
  });

  it('refuses a field removed without reserving its number and name', () => {
    const d = copy();
    const text = edit(
      d,
      ABCI,
      '  string log = 3;\n  int64 gas_wanted = 5;\n  string codespace = 8;\n  // keccak256',
      '  int64 gas_wanted = 5;\n  string codespace = 8;\n  // keccak256',
    );
    const r = check(d);
    assert.equal(r.status, 1);
    assert.deepEqual(r.findings, [
      `${d}/${ABCI}:${lineOf(text, 'message CheckTxResponse {')}: FIELD_NO_DELETE_UNLESS_RESERVED: ` +
        'field noded.abci.v1.CheckTxResponse.log = 3 was removed without reserving its number and name: ' +
        'add `reserved 3;` and `reserved "log";` to CheckTxResponse',
    ]);
  });

  it('refuses a removed field whose number is reserved but not its name; accepts both reserved', () => {
    const d = copy();
    edit(d, ABCI, '  string log = 3;\n  int64 gas_wanted = 5;', '  reserved 3;\n  int64 gas_wanted = 5;');
    const r = check(d);
    assert.equal(r.status, 1);
    assert.equal(r.findings.length, 1, r.stderr);
    assert.match(
      r.findings[0]!,
      /FIELD_NO_DELETE_UNLESS_RESERVED: field noded\.abci\.v1\.CheckTxResponse\.log = 3/,
    );

    edit(
      d,
      ABCI,
      '  reserved 3;\n  int64 gas_wanted = 5;',
      '  reserved 3;\n  reserved "log";\n  int64 gas_wanted = 5;',
    );
    const ok = check(d);
    // Not breaking; only the baseline is to be rewritten to record the reservation.
    assert.deepEqual(
      ok.findings.map((l) => l.split(': ')[1]),
      ['BASELINE_CURRENT'],
      ok.stderr,
    );
    assert.match(
      ok.findings[0]!,
      /the baseline lacks reserved 3 in noded\.abci\.v1\.CheckTxResponse, reserved "log" in/,
    );
    // And a later field may not take the reserved number or name (lint).
    const text = edit(d, ABCI, '  reserved "log";\n', '  reserved "log";\n  string log = 13;\n');
    const reuse = check(d);
    assert.ok(
      reuse.findings.includes(
        `${d}/${ABCI}:${lineOf(text, 'string log = 13;')}: FIELD_NOT_RESERVED: ` +
          'field noded.abci.v1.CheckTxResponse.log = 13: name "log" is reserved in noded.abci.v1.CheckTxResponse',
      ),
      reuse.stderr,
    );
  });

  it("refuses a field's type changed", () => {
    const d = copy();
    const text = edit(
      d,
      MEMPOOL,
      "  // The nonce after the account's transactions waiting in the mempool (its committed nonce when none).\n  uint64 nonce = 1;",
      "  // The nonce after the account's transactions waiting in the mempool (its committed nonce when none).\n  int64 nonce = 1;",
    );
    const r = check(d);
    assert.equal(r.status, 1);
    assert.deepEqual(r.findings, [
      `${d}/${MEMPOOL}:${lineOf(text, 'int64 nonce = 1;')}: FIELD_SAME_TYPE: ` +
        'field noded.mempool.v1.PendingNonceResponse.nonce = 1 changed type from uint64 to int64',
    ]);
  });

  it("refuses a field's message type and label changed", () => {
    const d = copy();
    const text = edit(d, ABCI, '  repeated Validator validators = 4;', '  ValidatorUpdate validators = 4;');
    const r = check(d);
    const line = lineOf(text, 'ValidatorUpdate validators = 4;');
    assert.deepEqual(r.findings, [
      `${d}/${ABCI}:${line}: FIELD_SAME_TYPE: field noded.abci.v1.InitChainRequest.validators = 4 changed type ` +
        'from noded.abci.v1.Validator to noded.abci.v1.ValidatorUpdate',
      `${d}/${ABCI}:${line}: FIELD_SAME_LABEL: field noded.abci.v1.InitChainRequest.validators = 4 changed label ` +
        'from repeated to singular',
    ]);
  });

  it('refuses a renumbered field', () => {
    const d = copy();
    const text = edit(d, MEMPOOL, '  uint64 ack = 2;', '  uint64 ack = 4;');
    const r = check(d);
    assert.equal(r.status, 1);
    assert.deepEqual(r.findings, [
      `${d}/${MEMPOOL}:${lineOf(text, 'uint64 ack = 4;')}: FIELD_SAME_NUMBER: ` +
        'field noded.mempool.v1.StreamAdmittedRequest.ack = 2 was renumbered to 4: old peers read it as another field; keep 2',
    ]);
  });

  it('refuses a removed rpc', () => {
    const d = copy();
    const text = edit(
      d,
      MEMPOOL,
      '  rpc FlushMempool(FlushMempoolRequest) returns (FlushMempoolResponse);\n',
      '',
    );
    const r = check(d);
    assert.equal(r.status, 1);
    assert.deepEqual(r.findings, [
      `${d}/${MEMPOOL}:${lineOf(text, 'service Mempool {')}: RPC_NO_DELETE: rpc noded.mempool.v1.Mempool.FlushMempool was removed`,
    ]);
  });

  it("refuses an rpc's streaming or request type changed", () => {
    const d = copy();
    const text = edit(
      d,
      HEALTH,
      'rpc Watch(HealthCheckRequest) returns (stream HealthCheckResponse);',
      'rpc Watch(HealthCheckRequest) returns (HealthCheckResponse);',
    );
    const r = check(d);
    assert.equal(r.status, 1);
    assert.deepEqual(r.findings, [
      `${d}/${HEALTH}:${lineOf(text, 'rpc Watch(')}: RPC_SAME_SERVER_STREAMING: ` +
        'rpc grpc.health.v1.Health.Watch: server streaming changed from true to false',
    ]);

    const d2 = copy();
    const text2 = edit(
      d2,
      MEMPOOL,
      'rpc StreamAdmitted(stream StreamAdmittedRequest)',
      'rpc StreamAdmitted(StreamAdmittedRequest)',
    );
    assert.deepEqual(check(d2).findings, [
      `${d2}/${MEMPOOL}:${lineOf(text2, 'rpc StreamAdmitted(')}: RPC_SAME_CLIENT_STREAMING: ` +
        'rpc noded.mempool.v1.Mempool.StreamAdmitted: client streaming changed from true to false',
    ]);

    const d3 = copy();
    const text3 = edit(
      d3,
      MEMPOOL,
      'rpc PendingNonce(PendingNonceRequest) returns (PendingNonceResponse);',
      'rpc PendingNonce(PendingTransactionRequest) returns (PendingNonceResponse);',
    );
    const r3 = check(d3);
    const line3 = lineOf(text3, 'rpc PendingNonce(');
    assert.ok(
      r3.findings.includes(
        `${d3}/${MEMPOOL}:${line3}: RPC_SAME_REQUEST_TYPE: rpc noded.mempool.v1.Mempool.PendingNonce: ` +
          'request changed from noded.mempool.v1.PendingNonceRequest to noded.mempool.v1.PendingTransactionRequest',
      ),
      r3.stderr,
    );
    // The lint sees it too: the request is not PendingNonceRequest, and it is shared with another rpc.
    assert.ok(
      r3.findings.some((l) => l.startsWith(`${d3}/${MEMPOOL}:${line3}: RPC_REQUEST_STANDARD_NAME: `)),
    );
    assert.ok(r3.findings.some((l) => l.includes(': RPC_REQUEST_RESPONSE_UNIQUE: ')));
  });

  it('refuses a removed message, enum value and a renamed package', () => {
    const d = copy();
    edit(d, MEMPOOL, 'message HasExecutableRequest {}\n', '');
    edit(d, MEMPOOL, 'rpc HasExecutable(HasExecutableRequest)', 'rpc HasExecutable(FlushMempoolRequest)');
    const r = check(d);
    assert.ok(
      r.findings.some((l) =>
        l.endsWith('MESSAGE_NO_DELETE: message noded.mempool.v1.HasExecutableRequest was removed'),
      ),
      r.stderr,
    );

    const d2 = copy();
    edit(d2, ABCI, '  MISBEHAVIOR_TYPE_DUPLICATE_VOTE = 1;\n', '');
    assert.ok(
      check(d2).findings.some((l) =>
        l.endsWith(
          'ENUM_VALUE_NO_DELETE_UNLESS_RESERVED: enum value noded.abci.v1.MisbehaviorType.MISBEHAVIOR_TYPE_DUPLICATE_VOTE = 1 ' +
            'was removed without reserving its number and name',
        ),
      ),
    );

    // noded.state.v1 -> v2 in place (directory and package): v1's clients lose their contract.
    const d3 = copy();
    mkdirSync(join(work, d3, 'noded/state/v2'));
    renameSync(join(work, d3, 'noded/state/v1/state.proto'), join(work, d3, 'noded/state/v2/state.proto'));
    rmSync(join(work, d3, 'noded/state/v1'), { recursive: true });
    edit(d3, 'noded/state/v2/state.proto', 'package noded.state.v1;', 'package noded.state.v2;');
    const r3 = check(d3);
    assert.ok(
      r3.findings.includes(
        `${d3}/noded/state/v1/state.proto:1: PACKAGE_NO_DELETE: package noded.state.v1 was removed or renamed ` +
          '(its files were noded/state/v1/state.proto): a change old clients would misread is a new package beside it',
      ),
      r3.stderr,
    );
  });

  it('refuses lint violations, naming file:line and the rule', () => {
    const d = copy();
    const text = edit(
      d,
      MEMPOOL,
      'message FlushMempoolResponse {}',
      [
        'message FlushMempoolResponse {',
        '  uint64 droppedCount = 1;',
        '  uint64 dropped_bytes = 19500;',
        '  uint64 dropped_txs = 1;',
        '  DropReason reason = 2;',
        '}',
        '',
        'enum DropReason {',
        '  DROP_REASON_NONE = 0;',
        '  FLUSHED = 1;',
        '}',
        '',
        'message flush_stats {}',
      ].join('\n'),
    );
    const r = check(d);
    assert.equal(r.status, 1);
    const at = (needle: string) => `${d}/${MEMPOOL}:${lineOf(text, needle)}`;
    assert.deepEqual(
      r.findings.filter((l) => !l.includes('BASELINE_CURRENT')).sort(),
      [
        `${at('droppedCount')}: FIELD_LOWER_SNAKE_CASE: field noded.mempool.v1.FlushMempoolResponse.droppedCount = 1: the name must be lower_snake_case`,
        `${at('dropped_bytes')}: FIELD_NO_RESERVED_RANGE: field noded.mempool.v1.FlushMempoolResponse.dropped_bytes = 19500: 19000-19999 are reserved by protobuf itself`,
        `${at('dropped_txs')}: FIELD_NUMBER_UNIQUE: field noded.mempool.v1.FlushMempoolResponse.dropped_txs = 1: number 1 is already field "droppedCount"`,
        `${at('DROP_REASON_NONE')}: ENUM_ZERO_VALUE_SUFFIX: enum value noded.mempool.v1.DropReason.DROP_REASON_NONE = 0 must be DROP_REASON_UNSPECIFIED (or DROP_REASON_UNKNOWN)`,
        `${at('FLUSHED = 1')}: ENUM_VALUE_PREFIX: enum value noded.mempool.v1.DropReason.FLUSHED must start with DROP_REASON_`,
        `${at('message flush_stats')}: MESSAGE_PASCAL_CASE: message noded.mempool.v1.flush_stats must be PascalCase`,
      ].sort(),
    );

    // A package that does not match its directory, and one without a version.
    const d2 = copy();
    const text2 = edit(d2, MEMPOOL, 'package noded.mempool.v1;', 'package noded.mempool;');
    const pkgLine = lineOf(text2, 'package noded.mempool;');
    const r2 = check(d2);
    assert.ok(
      r2.findings.includes(
        `${d2}/${MEMPOOL}:${pkgLine}: PACKAGE_VERSION_SUFFIX: package noded.mempool must end in a version (noded.<area>.v1)`,
      ),
      r2.stderr,
    );
    assert.ok(
      r2.findings.includes(
        `${d2}/${MEMPOOL}:${pkgLine}: PACKAGE_DIRECTORY_MATCH: package noded.mempool must be in directory noded/mempool/, not noded/mempool/v1/`,
      ),
    );

    // An rpc whose response is not <Rpc>Response, and a field type that names nothing.
    const d3 = copy();
    const text3 = edit(
      d3,
      MEMPOOL,
      'rpc FlushMempool(FlushMempoolRequest) returns (FlushMempoolResponse);',
      'rpc FlushMempool(FlushMempoolRequest) returns (FlushMempoolResponse);\n  rpc Drain(DrainRequest) returns (PoolTx);',
    );
    edit(
      d3,
      MEMPOOL,
      'message FlushMempoolRequest {}',
      'message FlushMempoolRequest {}\n\nmessage DrainRequest {\n  Missing what = 1;\n}',
    );
    const text3b = readFileSync(join(work, d3, MEMPOOL), 'utf8');
    const r3 = check(d3);
    assert.ok(
      r3.findings.includes(
        `${d3}/${MEMPOOL}:${lineOf(text3, 'rpc Drain(')}: RPC_RESPONSE_STANDARD_NAME: rpc noded.mempool.v1.Mempool.Drain: ` +
          'its response must be DrainResponse (or MempoolDrainResponse) of package noded.mempool.v1, not PoolTx',
      ),
      r3.stderr,
    );
    assert.ok(
      r3.findings.includes(
        `${d3}/${MEMPOOL}:${lineOf(text3b, 'Missing what = 1;')}: TYPE_KNOWN: field noded.mempool.v1.DrainRequest.what = 1: ` +
          'type Missing is no scalar, message or enum in scope',
      ),
      r3.stderr,
    );
  });

  it('names file:line of what it cannot parse (exit 2)', () => {
    const d = copy();
    const text = edit(d, MEMPOOL, '  uint64 ack = 2;', '  uint64 ack 2;');
    const r = check(d);
    assert.equal(r.status, 2);
    assert.equal(
      r.stderr.trim(),
      `${d}/${MEMPOOL}:${lineOf(text, 'uint64 ack 2;')}: PARSE: expected "=", found "2"`,
    );
  });

  it('accepts an added field and an added rpc, once the baseline records them', () => {
    const d = copy();
    edit(
      d,
      MEMPOOL,
      '  uint64 pending = 4;\n}',
      '  uint64 pending = 4;\n  // Bytes of the pending ones.\n  uint64 pending_bytes = 5;\n}',
    );
    edit(
      d,
      MEMPOOL,
      'rpc HasExecutable(HasExecutableRequest) returns (HasExecutableResponse);',
      'rpc HasExecutable(HasExecutableRequest) returns (HasExecutableResponse);\n  rpc Drain(DrainRequest) returns (DrainResponse);',
    );
    edit(
      d,
      MEMPOOL,
      'message FlushMempoolRequest {}',
      'message DrainRequest {}\n\nmessage DrainResponse {}\n\nmessage FlushMempoolRequest {}',
    );
    // Against the committed baseline: nothing breaks; the baseline is only out of date.
    const r = check(d);
    assert.equal(r.status, 1);
    assert.deepEqual(r.findings, [
      `${relative(work, BASELINE)}:1: BASELINE_CURRENT: the baseline lacks message noded.mempool.v1.DrainRequest, ` +
        'message noded.mempool.v1.DrainResponse, field noded.mempool.v1.UnconfirmedTxsResponse = 5, ' +
        'rpc noded.mempool.v1.Mempool.Drain: run `npm run proto:check -- --write-baseline` and commit it with the change',
    ]);
    // --write-baseline records them (here into a copy of the baseline); then the check passes.
    const baseline = join(work, `${d}-baseline.json`);
    copyFileSync(BASELINE, baseline);
    const w = check(d, '--baseline', baseline, '--write-baseline');
    assert.equal(w.status, 0, w.stderr);
    const ok = check(d, '--baseline', baseline);
    assert.equal(ok.status, 0, ok.stderr);
    // What was added is now protected: removing the new field is refused.
    edit(d, MEMPOOL, '  uint64 pending_bytes = 5;\n', '');
    assert.ok(
      check(d, '--baseline', baseline).findings.some((l) =>
        l.endsWith(
          'FIELD_NO_DELETE_UNLESS_RESERVED: field noded.mempool.v1.UnconfirmedTxsResponse.pending_bytes = 5 was removed ' +
            'without reserving its number and name: add `reserved 5;` and `reserved "pending_bytes";` to UnconfirmedTxsResponse',
        ),
      ),
    );
  });

  it('refuses a reserved number dropped, however the ranges are written', () => {
    const d = copy();
    edit(d, ABCI, 'message CommitRequest {}', 'message CommitRequest {\n  reserved 20 to 30;\n}');
    const baseline = join(work, `${d}-baseline.json`);
    copyFileSync(BASELINE, baseline);
    assert.equal(check(d, '--baseline', baseline, '--write-baseline').status, 0);
    // The same numbers, split differently: nothing changed.
    edit(d, ABCI, '  reserved 20 to 30;', '  reserved 20 to 25, 26, 27 to 30;');
    const same = check(d, '--baseline', baseline);
    assert.equal(same.status, 0, same.stderr);
    const text = edit(d, ABCI, '  reserved 20 to 25, 26, 27 to 30;', '  reserved 20 to 25, 27 to 30;');
    assert.deepEqual(check(d, '--baseline', baseline).findings, [
      `${d}/${ABCI}:${lineOf(text, 'message CommitRequest {')}: RESERVED_MESSAGE_NO_DELETE: ` +
        'message noded.abci.v1.CommitRequest: reserved 20 to 30 is no longer reserved in full',
    ]);
  });

  it('--write-baseline refuses a breaking change and leaves the baseline as it was; --allow-breaking writes it', () => {
    const d = copy();
    edit(d, MEMPOOL, '  uint64 ack = 2;', '  uint64 ack = 4;');
    const baseline = join(work, `${d}-baseline.json`);
    copyFileSync(BASELINE, baseline);
    const before = readFileSync(baseline, 'utf8');
    const w = check(d, '--baseline', baseline, '--write-baseline');
    assert.equal(w.status, 1);
    assert.match(
      w.stderr,
      /FIELD_SAME_NUMBER: field noded\.mempool\.v1\.StreamAdmittedRequest\.ack = 2 was renumbered to 4/,
    );
    assert.match(w.stderr, /baseline not written: 0 lint and 1 breaking finding\(s\)/);
    assert.equal(readFileSync(baseline, 'utf8'), before);
    const forced = check(d, '--baseline', baseline, '--write-baseline', '--allow-breaking');
    assert.equal(forced.status, 0, forced.stderr);
    assert.match(forced.stdout, /1 breaking change\(s\) accepted/);
    assert.notEqual(readFileSync(baseline, 'utf8'), before);
    assert.equal(check(d, '--baseline', baseline).status, 0);
  });
});
