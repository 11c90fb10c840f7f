// Counterexamples the fuzz properties found (docs/reliability.md lists them), kept as plain tests so
// that each bug stays fixed whatever the seed.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import { crc32 } from 'node:zlib';
import { ed25519 } from '@noble/curves/ed25519.js';
import { makeGenesis, parseGenesisText, renderGenesisJson } from '@noded/config';
import { decodeBlock, encodeBlock, parseWal, Wal } from '@noded/consensus';
import { MemFs } from '@noded/consensus/src/sim/memfs.js';
import { chainCommon } from '@noded/execution/src/evm/common.js';
import { rlpEncode } from '@noded/execution/src/rlp.js';
import { decodeTx, TxCode, TxRejectedError } from '@noded/execution/src/txs.js';
import { Query, QuerySyntaxError } from '@noded/rpc/src/comet/index.js';
import { defaultApiOptions, RestServer } from '@noded/rpc/src/rest/index.js';
import { GatewayError, matchRoute, REST_ROUTES } from '@noded/rpc/src/rest/routes.js';
import { type Block, type BlockId, silentLogger } from '@noded/types';
import { EVM_CHAIN_ID, FakeChain } from '../rpc-comet/fake-node.js';

const EMPTY = new Uint8Array(0);
const nilId = (): BlockId => ({ hash: EMPTY, partSetHeader: { total: 0, hash: EMPTY } });

function blockWithChainId(chainId: string): Block {
  return {
    header: {
      version: { block: 0, app: 0 },
      chainId,
      height: 0,
      time: 0n,
      lastBlockId: nilId(),
      lastCommitHash: EMPTY,
      dataHash: EMPTY,
      validatorsHash: EMPTY,
      nextValidatorsHash: EMPTY,
      consensusHash: EMPTY,
      appHash: EMPTY,
      lastResultsHash: EMPTY,
      evidenceHash: EMPTY,
      proposerAddress: EMPTY,
    },
    data: { txs: [] },
    evidence: [],
    lastCommit: null,
  };
}

describe('fuzz regressions: consensus codec', () => {
  it('a header whose chain id starts with U+FEFF decodes with it (the BOM was dropped)', () => {
    const b = blockWithChainId('\uFEFF');
    assert.deepStrictEqual(decodeBlock(encodeBlock(b)), b);
    const c = blockWithChainId('\uFEFFchain-local');
    assert.equal(decodeBlock(encodeBlock(c)).header.chainId, '\uFEFFchain-local');
  });
});

/** A WAL record with a valid CRC: crc32 (BE) | length (BE) | payload. */
function walRecord(text: string): Uint8Array {
  const payload = new TextEncoder().encode(text);
  const out = new Uint8Array(8 + payload.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, crc32(payload) >>> 0);
  view.setUint32(4, payload.length);
  out.set(payload, 8);
  return out;
}

describe('fuzz regressions: consensus WAL', () => {
  const cases: Array<[string, RegExp]> = [
    ['null', /record null is not an object/],
    ['[]', /record \[\] is not an object/],
    ['7', /record 7 is not an object/],
    ['{}', /entry height undefined is not a non-negative integer/],
    ['{"end":"5"}', /end marker height "5" is not a non-negative integer/],
    ['{"h":-1,"e":{"kind":"txsAvailable"}}', /entry height -1 is not/],
    ['{"h":1,"e":null}', /entry null has no kind/],
    ['{"h":1,"e":{"now":{"$n":"1"}}}', /has no kind/],
  ];
  for (const [payload, why] of cases) {
    it(`a record with a valid CRC around ${payload} is a corrupt tail, not a crash at replay`, async () => {
      const good = walRecord('{"end":3}');
      const bytes = Buffer.concat([good, walRecord(payload)]);
      const parsed = parseWal(bytes);
      assert.equal(parsed.goodLength, good.length);
      assert.match(parsed.error ?? '', why);
      const fs = new MemFs();
      fs.corrupt('/wal-dir/wal', bytes);
      const wal = await Wal.open(fs, '/wal-dir', silentLogger);
      assert.deepStrictEqual(wal.entriesFor(4), []);
      assert.equal(wal.lastEndHeight(), 3);
      assert.equal((await fs.readFile('/wal-dir/wal'))?.length, good.length);
      assert.ok((await fs.list('/wal-dir')).includes('wal.corrupted-0'));
    });
  }
});

describe('fuzz regressions: transaction decoding', () => {
  const common = chainCommon(31337n);
  const b = (...bytes: number[]) => Uint8Array.from(bytes);
  const none = new Uint8Array(0);
  const to = new Uint8Array(20).fill(0x42);
  const sig = [b(0x1b), new Uint8Array(32).fill(1), new Uint8Array(32).fill(2)];

  it('the counterexample: a legacy transaction whose gas limit is a list is refused, not a TypeError', () => {
    // [nonce, gasPrice, gas = [0x80], to, value, data, v = 27, r, s]
    const raw = rlpEncode([none, none, [none], to, none, none, ...sig]);
    assert.throws(
      () => decodeTx(raw, common, 31337n),
      (e: unknown) =>
        e instanceof TxRejectedError &&
        e.code === TxCode.decode &&
        /got a list \(field 2 of legacy/.test(e.message),
    );
  });

  it('a list in place of v, the chain id or a fee is refused with the field named', () => {
    const legacy = rlpEncode([none, none, b(0x52, 0x08), to, none, none, [b(1)], sig[1]!, sig[2]!]);
    const typed = (fields: unknown[]) => Uint8Array.from([2, ...rlpEncode(fields as never)]);
    const base = [b(0x7a, 0x69), none, none, b(1), b(0x52, 0x08), to, none, none, [], none, sig[1]!, sig[2]!];
    const cases: Array<[Uint8Array, RegExp]> = [
      [legacy, /field 6 of legacy transaction/],
      [typed([[], ...base.slice(1)]), /field 0 of type 2 transaction/],
      [typed([...base.slice(0, 3), [b(5)], ...base.slice(4)]), /field 3 of type 2 transaction/],
    ];
    for (const [raw, why] of cases) {
      assert.throws(
        () => decodeTx(raw, common, 31337n),
        (e: unknown) => e instanceof TxRejectedError && e.code === TxCode.decode && why.test(e.message),
      );
    }
  });
});

describe('fuzz regressions: CometBFT query language', () => {
  const refused = (text: string, why: RegExp) =>
    assert.throws(
      () => Query.parse(text),
      (e: unknown) => e instanceof QuerySyntaxError && why.test(e.message),
    );

  it('DATE and TIME years 0000-0099 are those years (out of range), not 1900-1999', () => {
    refused('block.time >= DATE 0000-01-01', /datestamp year 0 out of range/);
    refused('block.time >= DATE 0050-06-01', /datestamp year 50 out of range/);
    refused('tx.time < TIME 0099-01-01T00:00:00Z', /timestamp year 99 out of range/);
    // An event value in the year 50 is not read as 1950 either.
    assert.equal(Query.parse('t > DATE 1949-01-01').matches({ t: ['0050-01-01'] }), false);
    assert.equal(Query.parse('t < DATE 1949-01-01').matches({ t: ['0050-01-01'] }), true);
  });

  it("TIME follows Go's time.Parse ranges: no second 60, zone offsets up to 24:60", () => {
    refused('tx.time < TIME 2020-01-01T00:00:60Z', /invalid TIME value/);
    refused('tx.time < TIME 2995-01-01T00:00:00+25:00', /invalid TIME value/);
    refused('tx.time < TIME 2020-01-01T00:00:00-01:61', /invalid TIME value/);
    assert.equal(Query.parse('tx.time < TIME 2020-01-01T00:00:00+24:60').conditions.length, 1);
  });

  it('the year range applies to the year as written, in the literal own zone (Go Time.Year)', () => {
    assert.equal(Query.parse('tx.time >= TIME 1900-01-01T00:30:00+01:00').conditions.length, 1);
    assert.equal(Query.parse('tx.time <= TIME 2999-12-31T23:30:00-01:00').conditions.length, 1);
  });

  it("white space is Go's unicode.IsSpace: U+0085 separates tokens, U+FEFF is invalid input", () => {
    assert.deepStrictEqual(Query.parse("tm.event\u0085=\u0085'Tx'").conditions, [
      { tag: 'tm.event', op: '=', arg: { type: 'string', text: 'Tx' } },
    ]);
    refused("\uFEFFtm.event = 'Tx'", /invalid input/);
  });
});

describe('fuzz regressions: REST paths', () => {
  it('a malformed percent-encoding in a path parameter is a GatewayError 400 (was a URIError)', () => {
    for (const path of [
      '/cosmos/auth/v1beta1/accounts/%',
      '/cosmos/base/tendermint/v1beta1/blocks/%zz',
      '/cosmos/tx/v1beta1/txs/%E0%A4%A',
    ]) {
      assert.throws(
        () => matchRoute(REST_ROUTES, path),
        (e: unknown) =>
          e instanceof GatewayError && e.httpStatus === 400 && /malformed percent-encoding/.test(e.message),
      );
    }
    // A malformed segment where a route has a literal is no match (404), not a 400.
    assert.equal(matchRoute(REST_ROUTES, '/cosmos/base/tendermint/v1beta1/%/latest'), undefined);
  });

  it('the server answers 400, not 500, to a bad escape and to a request target that is no URL', async () => {
    const chain = await FakeChain.create();
    const server = new RestServer({
      node: chain,
      chain,
      logger: silentLogger,
      options: { ...defaultApiOptions, enable: true },
      evmChainId: EVM_CHAIN_ID,
      gas: { baseFee: 1n, minGasPrice: 1n, maxGasPrice: 10n },
    });
    const port = await server.listen('127.0.0.1', 0);
    const statusOf = (target: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1');
        let text = '';
        socket.on('data', (c) => {
          text += c.toString('latin1');
        });
        socket.on('error', reject);
        socket.on('close', () => resolve(text.slice(9, 12)));
        socket.end(`GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      });
    try {
      assert.equal(await statusOf('/cosmos/auth/v1beta1/accounts/%'), '400');
      assert.equal(await statusOf('http://['), '400');
      assert.equal(await statusOf('/cosmos/base/tendermint/v1beta1/syncing'), '200');
    } finally {
      await server.close();
    }
  });
});

describe('fuzz regressions: genesis.json', () => {
  const genesis = () =>
    JSON.parse(
      renderGenesisJson(
        makeGenesis({
          chainId: 'chain-local',
          genesisTime: '2025-01-01T00:00:00Z',
          validators: [
            { publicKey: ed25519.getPublicKey(new Uint8Array(32).fill(7)), power: 10n, name: 'v' },
          ],
          accounts: [{ address: `0x${'11'.repeat(20)}`, balance: 5n }],
        }),
      ),
    );
  const problemsOf = (g: unknown) =>
    parseGenesisText(JSON.stringify(g)).problems.map((p) => `${p.key}: ${p.message}`);

  it('a validator address that is a JSON object with a "toString" key is a problem (String() threw)', () => {
    const g = genesis();
    const expected = g.validators[0].address;
    g.validators[0].address = { toString: 1 };
    assert.deepStrictEqual(problemsOf(g), [
      `validators[0].address: must be ${expected} (the first 20 bytes of sha256 of the key), got a table`,
    ]);
  });

  it('consensus integers past int64 and an initial height past 2^53 - 1 are problems, not other numbers', () => {
    const g = genesis();
    g.consensus_params.block.max_gas = '9223372036854775808';
    g.consensus_params.evidence.max_age_num_blocks = '99999999999999999999';
    g.initial_height = '9007199254740993';
    g.app_state.evm.accounts[0].nonce = '18446744073709551616';
    assert.deepStrictEqual(problemsOf(g), [
      'initial_height: must be >= 1 and <= 9007199254740991, got "9007199254740993"',
      'consensus_params.block.max_gas: must fit in an int64 (<= 9223372036854775807), got "9223372036854775808"',
      'consensus_params.evidence.max_age_num_blocks: must fit in an int64 (<= 9223372036854775807), got "99999999999999999999"',
      'app_state.evm.accounts[0].nonce: must fit in a uint64 (<= 18446744073709551615), got "18446744073709551616"',
    ]);
    // Balances are uint256: wei amounts far past int64 stay valid.
    const rich = genesis();
    rich.app_state.evm.accounts[0].balance = (10n ** 30n).toString();
    assert.deepStrictEqual(problemsOf(rich), []);
  });
});
