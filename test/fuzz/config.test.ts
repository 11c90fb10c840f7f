// Fuzzing the operator's files (libs/config): config.toml, app.toml and client.toml text, and
// genesis.json text. Whatever the text, parsing returns problems (file, key, message) and never
// throws; what parses renders back to text that parses to the same typed config; an accepted genesis
// converts to a runtime genesis whose integers fit the types consensus gives them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ed25519 } from '@noble/curves/ed25519.js';
import {
  CHAIN_IDS,
  type ChainId,
  type ConfigProblem,
  checkListenAddress,
  defaultAppTomlValues,
  defaultClientTomlValues,
  defaultConfigTomlValues,
  EVM_CHAIN_IDS,
  formatDuration,
  keyPaths,
  makeGenesis,
  parseAppToml,
  parseClientToml,
  parseConfigToml,
  parseDuration,
  parseGenesisText,
  renderAppToml,
  renderClientToml,
  renderConfigToml,
  renderGenesisJson,
  toRuntimeGenesis,
} from '@noded/config';
import type { TomlSection } from '@noded/config/src/schema/section.js';
import { checkPeerList } from '@noded/config/src/values.js';
import fc from 'fast-check';
import { stringify } from 'smol-toml';
import { applyMutations, bytesOf, check, hex, mutations, onlyThrows, rec, text } from './fuzz.js';

type Plain = Record<string, unknown>;

interface TomlFile {
  label: string;
  defaults: () => TomlSection;
  render: (f: never) => string;
  parse: (text: string | undefined, problems: ConfigProblem[]) => { file: TomlSection; typed: unknown };
}

const FILES: TomlFile[] = [
  {
    label: 'config.toml',
    defaults: defaultConfigTomlValues,
    render: renderConfigToml as (f: never) => string,
    parse: (t, p) => {
      const r = parseConfigToml(t, p);
      return { file: r.file, typed: r.config };
    },
  },
  {
    label: 'app.toml',
    defaults: defaultAppTomlValues,
    render: renderAppToml as (f: never) => string,
    parse: (t, p) => {
      const r = parseAppToml(t, p, '/fuzz/config');
      return { file: r.file, typed: r.app };
    },
  },
  {
    label: 'client.toml',
    defaults: defaultClientTomlValues,
    render: renderClientToml as (f: never) => string,
    parse: (t, p) => {
      const r = parseClientToml(t, p);
      return { file: r.file, typed: r.client };
    },
  },
];

/** Keys left alone: they name files the parser reads from disk (the fuzz stays off the disk). */
const ON_DISK = new Set(['api.tls_cert_file', 'api.tls_key_file']);

/** The default tree as nested plain objects (what smol-toml stringifies). */
function plain(section: TomlSection): Plain {
  const out: Plain = {};
  for (const [k, v] of Object.entries(section)) {
    out[k] = v !== null && typeof v === 'object' && !Array.isArray(v) ? plain(v as TomlSection) : v;
  }
  return out;
}

/** Any TOML value: strings that look like the file's values, numbers at the edges, dates, lists, tables. */
const tomlScalar = fc.oneof(
  fc.constantFrom(
    '',
    '0',
    '1s',
    '500ms',
    '1m30s',
    '-1s',
    '1.5h',
    '99999999999999999999h',
    'tcp://0.0.0.0:26656',
    'tcp://[::1]:1',
    ':0',
    'host:65536',
    `${'a'.repeat(40)}@1.2.3.4:26656`,
    'eth,net',
    'eth,,net',
    '1000000000',
    '-1',
    '0.5',
    '1e18',
    'info',
    'json',
    'archive',
    'nothing',
    '*',
  ),
  text(30),
  fc.integer(),
  fc.constantFrom(0, -1, 1, 2 ** 31, 2 ** 53, Number.MAX_SAFE_INTEGER),
  fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n }),
  fc.double(),
  fc.boolean(),
  fc.date({ noInvalidDate: true }),
);
const tomlValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: tomlScalar },
  { weight: 1, arbitrary: fc.array(tomlScalar, { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), tomlScalar, { maxKeys: 2 }) },
);

/** A file's default tree with some keys set to any TOML value, unknown keys added, sections replaced. */
function mutatedTree(file: TomlFile): fc.Arbitrary<Plain> {
  const keys = keyPaths(file.defaults()).filter((k) => !ON_DISK.has(k));
  const sections = [
    ...new Set(keys.filter((k) => k.includes('.')).map((k) => k.slice(0, k.lastIndexOf('.')))),
  ];
  const edits: Array<fc.WeightedArbitrary<[string, unknown]>> = [
    { weight: 6, arbitrary: fc.tuple(fc.constantFrom(...keys), tomlValue) },
    {
      weight: 1,
      arbitrary: fc.tuple(
        fc
          .constantFrom('', ...sections)
          .chain((s) => fc.string({ minLength: 1, maxLength: 12 }).map((k) => (s ? `${s}.${k}` : k))),
        tomlScalar,
      ),
    },
  ];
  if (sections.length > 0)
    edits.push({ weight: 1, arbitrary: fc.tuple(fc.constantFrom(...sections), tomlScalar) });
  const edit = fc.oneof(...edits);
  return fc.array(edit, { minLength: 1, maxLength: 4 }).map((edits) => {
    const tree = plain(file.defaults());
    for (const [path, value] of edits) {
      const parts = path.split('.');
      let at = tree;
      for (const p of parts.slice(0, -1)) {
        const next = at[p];
        if (next === null || typeof next !== 'object' || Array.isArray(next) || next instanceof Date) break;
        at = next as Plain;
      }
      at[parts.at(-1)!] = value;
    }
    return tree;
  });
}

function checkProblems(label: string, problems: ConfigProblem[]): void {
  for (const p of problems) {
    assert.equal(p.file, label);
    assert.equal(typeof p.key, 'string');
    assert.ok(typeof p.message === 'string' && p.message.length > 0);
  }
}

// ---- genesis -----------------------------------------------------------------------------------

const INT64_MAX = (1n << 63n) - 1n;
const publicKey = bytesOf(32).map((seed) => ed25519.getPublicKey(seed));
const genesisInput = rec({
  chainId: fc.constantFrom(...CHAIN_IDS) as fc.Arbitrary<ChainId>,
  genesisTime: fc
    .date({
      min: new Date('1970-01-01T00:00:00Z'),
      max: new Date('2999-12-31T00:00:00Z'),
      noInvalidDate: true,
    })
    .map((d) => d.toISOString()),
  validators: fc.uniqueArray(
    rec({ publicKey, power: fc.bigInt({ min: 1n, max: 10n ** 15n }), name: text(20) }),
    { minLength: 1, maxLength: 3, selector: (v) => hex(v.publicKey) },
  ),
  accounts: fc.uniqueArray(
    rec({ address: bytesOf(20).map((b) => `0x${hex(b)}`), balance: fc.bigInt({ min: 0n, max: 1n << 200n }) }),
    { maxLength: 3, selector: (a) => a.address },
  ),
});

/** Every (path, value) leaf of a JSON tree. */
function jsonPaths(v: unknown, at: string[] = []): string[][] {
  if (v === null || typeof v !== 'object') return [at];
  const entries = Array.isArray(v) ? v.map((x, i) => [String(i), x] as const) : Object.entries(v);
  return [at, ...entries.flatMap(([k, x]) => jsonPaths(x, [...at, k]))];
}

/** A valid genesis with one node (leaf or subtree) replaced by any JSON value, or removed. */
const damagedGenesis = fc
  .tuple(
    genesisInput,
    fc.nat(),
    fc.option(
      fc.oneof(
        fc.jsonValue({ maxDepth: 2 }),
        tomlScalar.map(String),
        // Decimal strings around the int64 and safe-integer edges (genesis writes integers as strings).
        fc.bigInt({ min: -(1n << 70n), max: 1n << 70n }).map(String),
        fc.constantFrom(
          '9007199254740993',
          '9223372036854775807',
          '9223372036854775808',
          '-9223372036854775809',
        ),
        // JSON objects whose keys shadow Object.prototype (String() and template literals use them).
        fc.constantFrom<unknown>(
          { toString: 1 },
          { valueOf: 'x', toString: null },
          { __proto__: 5 },
          { constructor: 0 },
        ),
      ),
      { nil: undefined },
    ),
  )
  .map(([input, at, value]) => {
    const json = JSON.parse(renderGenesisJson(makeGenesis(input))) as Plain;
    const paths = jsonPaths(json).filter((p) => p.length > 0);
    const path = paths[at % paths.length]!;
    let node: Plain = json;
    for (const k of path.slice(0, -1)) node = node[k] as Plain;
    if (value === undefined) delete node[path.at(-1)!];
    else node[path.at(-1)!] = value;
    return JSON.stringify(json);
  });

describe('fuzz: config.toml, app.toml, client.toml', () => {
  for (const file of FILES) {
    it(`${file.label}: any text gives problems, never an exception`, () => {
      const rendered = new TextEncoder().encode(file.render(file.defaults() as never));
      check(
        fc.property(
          fc.oneof(
            fc.string({ maxLength: 200 }),
            mutations.map((ms) => new TextDecoder().decode(applyMutations(rendered, ms))),
          ),
          (t) => {
            const problems: ConfigProblem[] = [];
            const r = onlyThrows(() => file.parse(t, problems));
            assert.ok(r.ok);
            checkProblems(file.label, problems);
          },
        ),
        2,
      );
    });

    it(`${file.label}: any value at any key gives problems; what parses renders back to the same config`, () => {
      check(
        fc.property(mutatedTree(file), (tree) => {
          let t: string;
          try {
            t = stringify(tree);
          } catch {
            return; // smol-toml cannot write this tree (not the parser's business)
          }
          const problems: ConfigProblem[] = [];
          const first = onlyThrows(() => file.parse(t, problems));
          assert.ok(first.ok);
          checkProblems(file.label, problems);
          // Bad values were replaced by defaults: the file tree renders to text that parses to the
          // same typed config (only the cross-file checks may still complain).
          const again: ConfigProblem[] = [];
          const second = file.parse(file.render(first.value.file as never), again);
          assert.deepStrictEqual(second.typed, first.value.typed);
          for (const p of again)
            assert.ok(
              problems.some((q) => q.key === p.key),
              `new problem ${p.key}: ${p.message}`,
            );
        }),
        2,
      );
    });
  }

  it('durations, listen addresses and peer lists read back what was written', () => {
    check(
      fc.property(
        fc.nat({ max: 10 ** 9 }),
        fc.oneof(fc.ipV4(), fc.domain(), fc.constant('')),
        fc.integer({ min: 1, max: 65535 }),
        fc.array(fc.tuple(bytesOf(20), fc.ipV4(), fc.integer({ min: 1, max: 65535 })), { maxLength: 3 }),
        (ms, host, port, peers) => {
          assert.equal(parseDuration(formatDuration(ms)), ms);
          const addr = checkListenAddress(`tcp://${host}:${port}`);
          assert.ok(typeof addr !== 'string', String(addr));
          assert.deepStrictEqual([addr.host, addr.port], [host === '' ? '0.0.0.0' : host, port]);
          const list = peers.map(([id, ip, p]) => `${hex(id)}@${ip}:${p}`).join(',');
          assert.deepStrictEqual(
            checkPeerList(list),
            peers.map(([id, ip, p]) => ({ nodeId: hex(id), host: ip, port: p })),
          );
        },
      ),
    );
  });
});

describe('fuzz: genesis.json', () => {
  it('a genesis made by makeGenesis parses back to itself and to its runtime form', () => {
    check(
      fc.property(genesisInput, (input) => {
        const json = makeGenesis(input);
        const parsed = parseGenesisText(renderGenesisJson(json));
        assert.deepStrictEqual(parsed.problems, []);
        assert.deepStrictEqual(parsed.json, JSON.parse(JSON.stringify(json)));
        const rt = toRuntimeGenesis(parsed.json!);
        assert.equal(rt.chainId, input.chainId);
        assert.equal(rt.evmChainId, BigInt(EVM_CHAIN_IDS[input.chainId]));
        assert.deepStrictEqual(
          rt.validators.map((v) => [hex(v.pubKey), v.votingPower]),
          input.validators.map((v) => [hex(v.publicKey), v.power]),
        );
        assert.deepStrictEqual(
          rt.validatorNames,
          input.validators.map((v) => v.name),
        );
        assert.equal(rt.time, BigInt(Date.parse(input.genesisTime)) * 1_000_000n);
      }),
      4,
    );
  });

  it('any text, and any field of a valid genesis replaced, gives problems or a sound runtime genesis', () => {
    check(
      fc.property(
        fc.oneof(fc.string({ maxLength: 100 }), fc.json({ maxDepth: 3 }), damagedGenesis, damagedGenesis),
        (t) => {
          const r = onlyThrows(() => parseGenesisText(t));
          assert.ok(r.ok);
          checkProblems('genesis.json', r.value.problems);
          if (r.value.json === undefined) {
            assert.ok(r.value.problems.length > 0);
            return;
          }
          const rt = onlyThrows(() => toRuntimeGenesis(r.value.json!));
          assert.ok(rt.ok, `accepted genesis does not convert: ${!rt.ok && rt.error.message}`);
          const g = rt.value;
          assert.ok(
            Number.isSafeInteger(g.initialHeight) && g.initialHeight >= 1,
            `initial height ${g.initialHeight}`,
          );
          const cp = g.consensusParams;
          for (const [name, v] of Object.entries({
            'block.max_bytes': cp.block.maxBytes,
            'block.max_gas': cp.block.maxGas,
            'evidence.max_age_num_blocks': cp.evidence.maxAgeNumBlocks,
            'evidence.max_age_duration': cp.evidence.maxAgeDuration,
            'evidence.max_bytes': cp.evidence.maxBytes,
            'version.app': cp.version.app,
            'abci.vote_extensions_enable_height': cp.abci.voteExtensionsEnableHeight,
          })) {
            assert.ok(
              v >= -(INT64_MAX + 1n) && v <= INT64_MAX,
              `consensus_params.${name} ${v} is not an int64`,
            );
          }
          for (const v of g.validators) assert.ok(v.votingPower > 0n && v.votingPower <= INT64_MAX);
        },
      ),
      2,
    );
  });
});
