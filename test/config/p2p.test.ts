import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  CONFIG_TOML_DOCS,
  type ConfigProblem,
  defaultConfigTomlValues,
  formatProblem,
  parseConfigToml,
  renderConfigToml,
} from '@noded/config';

const cfg = (text: string) => {
  const problems: ConfigProblem[] = [];
  const r = parseConfigToml(text, problems);
  return { ...r, problems: problems.map(formatProblem) };
};
const p2p = (body: string) => cfg(`[p2p]\n${body}\n`);

const NEW_KEYS = [
  'pex',
  'seed_mode',
  'handshake_timeout',
  'dial_timeout',
  'send_rate',
  'recv_rate',
  'max_packet_msg_payload_size',
  'flush_throttle_timeout',
  'allow_duplicate_ip',
  'addr_book_strict',
];

const ID = '0123456789abcdef0123456789abcdef01234567';

function docsText(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'docs', 'configuration.md'))) {
    const up = dirname(dir);
    assert.notEqual(up, dir, 'docs/configuration.md not found above the test');
    dir = up;
  }
  return readFileSync(join(dir, 'docs', 'configuration.md'), 'utf8');
}

describe('config.toml [p2p]: the CometBFT keys beside the peer lists', () => {
  it("defaults are CometBFT v0.38's", () => {
    const f = defaultConfigTomlValues().p2p;
    assert.deepEqual(
      Object.fromEntries(NEW_KEYS.map((k) => [k, (f as unknown as Record<string, unknown>)[k]])),
      {
        pex: true,
        seed_mode: false,
        handshake_timeout: '20s',
        dial_timeout: '3s',
        send_rate: 5120000,
        recv_rate: 5120000,
        max_packet_msg_payload_size: 1024,
        flush_throttle_timeout: '100ms',
        allow_duplicate_ip: false,
        addr_book_strict: true,
      },
    );
  });

  it('the typed record holds them camelCase, durations in ms', () => {
    const c = cfg('');
    assert.deepEqual(c.problems, []);
    const { pex, handshakeTimeoutMs, dialTimeoutMs, sendRate, recvRate } = c.config.p2p;
    const { maxPacketMsgPayloadSize, flushThrottleTimeoutMs, allowDuplicateIp, addrBookStrict } =
      c.config.p2p;
    assert.deepEqual(
      {
        pex,
        handshakeTimeoutMs,
        dialTimeoutMs,
        sendRate,
        recvRate,
        maxPacketMsgPayloadSize,
        flushThrottleTimeoutMs,
        allowDuplicateIp,
        addrBookStrict,
      },
      {
        pex: true,
        handshakeTimeoutMs: 20000,
        dialTimeoutMs: 3000,
        sendRate: 5120000,
        recvRate: 5120000,
        maxPacketMsgPayloadSize: 1024,
        flushThrottleTimeoutMs: 100,
        allowDuplicateIp: false,
        addrBookStrict: true,
      },
    );
    const set = p2p(
      'pex = false\nhandshake_timeout = "1m"\ndial_timeout = "500ms"\nsend_rate = 1000\nrecv_rate = 2000\nmax_packet_msg_payload_size = 4096\nflush_throttle_timeout = "0s"\nallow_duplicate_ip = true\naddr_book_strict = false',
    );
    assert.deepEqual(set.problems, []);
    assert.equal(set.config.p2p.pex, false);
    assert.equal(p2p('seed_mode = true').config.p2p.seedMode, true);
    assert.equal(set.config.p2p.handshakeTimeoutMs, 60000);
    assert.equal(set.config.p2p.dialTimeoutMs, 500);
    assert.equal(set.config.p2p.sendRate, 1000);
    assert.equal(set.config.p2p.recvRate, 2000);
    assert.equal(set.config.p2p.maxPacketMsgPayloadSize, 4096);
    assert.equal(set.config.p2p.flushThrottleTimeoutMs, 0);
    assert.equal(set.config.p2p.allowDuplicateIp, true);
    assert.equal(set.config.p2p.addrBookStrict, false);
  });

  it('each is described, rendered with its comment and default, and documented', () => {
    const text = renderConfigToml();
    const docs = docsText();
    const rendered: Record<string, string> = {
      pex: 'true',
      seed_mode: 'false',
      handshake_timeout: '"20s"',
      dial_timeout: '"3s"',
      send_rate: '5120000',
      recv_rate: '5120000',
      max_packet_msg_payload_size: '1024',
      flush_throttle_timeout: '"100ms"',
      allow_duplicate_ip: 'false',
      addr_book_strict: 'true',
    };
    const p2pPart = text.slice(text.indexOf('\n[p2p]\n'), text.indexOf('\n[mempool]\n'));
    for (const key of NEW_KEYS) {
      const doc = CONFIG_TOML_DOCS[`p2p.${key}`];
      assert.ok(doc, `no description of p2p.${key}`);
      assert.ok(p2pPart.includes(`\n# ${doc}\n${key} = ${rendered[key]}\n`), `p2p.${key} not rendered`);
      assert.match(docs, new RegExp(`\\| \`${key}\` +\\| \`${rendered[key]}\` +\\|`), `docs: ${key}`);
    }
  });

  it('a bad value of each gets the precise message', () => {
    const cases: Array<[string, string]> = [
      ['pex = "yes"', 'config.toml: p2p.pex: must be true or false, got "yes"'],
      [
        'handshake_timeout = "20"',
        'config.toml: p2p.handshake_timeout: must be a duration string such as "1s", "500ms" or "1m30s", got "20"',
      ],
      ['handshake_timeout = "0s"', 'config.toml: p2p.handshake_timeout: must be at least 1ms, got "0s"'],
      [
        'dial_timeout = 3',
        'config.toml: p2p.dial_timeout: must be a duration string such as "1s", "500ms" or "1m30s", got 3',
      ],
      ['dial_timeout = "0s"', 'config.toml: p2p.dial_timeout: must be at least 1ms, got "0s"'],
      ['send_rate = 0', 'config.toml: p2p.send_rate: must be an integer >= 1, got 0'],
      ['send_rate = 1.5', 'config.toml: p2p.send_rate: must be an integer, got 1.5'],
      ['recv_rate = "5120000"', 'config.toml: p2p.recv_rate: must be an integer, got "5120000"'],
      ['recv_rate = -1', 'config.toml: p2p.recv_rate: must be an integer >= 1, got -1'],
      [
        'max_packet_msg_payload_size = 0',
        'config.toml: p2p.max_packet_msg_payload_size: must be an integer between 1 and 1048576, got 0',
      ],
      [
        'max_packet_msg_payload_size = 2000000',
        'config.toml: p2p.max_packet_msg_payload_size: must be an integer between 1 and 1048576, got 2000000',
      ],
      [
        'flush_throttle_timeout = "-100ms"',
        'config.toml: p2p.flush_throttle_timeout: must be a duration string such as "1s", "500ms" or "1m30s", got "-100ms"',
      ],
      ['allow_duplicate_ip = 1', 'config.toml: p2p.allow_duplicate_ip: must be true or false, got 1'],
      ['addr_book_strict = "false"', 'config.toml: p2p.addr_book_strict: must be true or false, got "false"'],
      ['pexx = true', 'config.toml: p2p.pexx: unknown key (did you mean "pex"?)'],
    ];
    for (const [line, message] of cases) {
      const c = p2p(line);
      assert.deepEqual(c.problems, [message], line);
    }
    // A bad value is replaced by its default in the typed record.
    assert.equal(p2p('send_rate = 0').config.p2p.sendRate, 5120000);
    assert.equal(p2p('handshake_timeout = "x"').config.p2p.handshakeTimeoutMs, 20000);
    // Several bad keys at once: each is reported.
    assert.deepEqual(p2p('pex = 1\nsend_rate = 0').problems, [
      'config.toml: p2p.pex: must be true or false, got 1',
      'config.toml: p2p.send_rate: must be an integer >= 1, got 0',
    ]);
  });
});

describe('config.toml [p2p]: node ids in persistent_peers, seeds and unconditional_peer_ids', () => {
  const malformed: Array<[string, string]> = [
    ['39 digits', ID.slice(0, 39)],
    ['41 digits', `${ID}0`],
    ['a non-hex digit', `${ID.slice(0, 39)}g`],
    ['a 0x prefix', `0x${ID.slice(0, 38)}`],
    ['a space inside', `${ID.slice(0, 20)} ${ID.slice(21)}`],
    ['full-width digits', '０'.repeat(40)],
    ['empty', ''],
  ];

  for (const key of ['persistent_peers', 'seeds'] as const) {
    it(`${key}: a malformed node id is refused, naming the id and the entry`, () => {
      for (const [what, id] of malformed) {
        const entry = `${id}@10.0.0.2:26656`;
        const c = p2p(`${key} = ${JSON.stringify(`${ID}@10.0.0.1:26656,${entry}`)}`);
        assert.deepEqual(
          c.problems,
          [
            `config.toml: p2p.${key}: each peer's node id must be exactly 40 hex digits, got ${JSON.stringify(id)} in ${JSON.stringify(entry)}`,
          ],
          what,
        );
        // Refused means not used: the typed list falls back to the default (none).
        assert.deepEqual(key === 'seeds' ? c.config.p2p.seeds : c.config.p2p.persistentPeers, [], what);
      }
      assert.deepEqual(p2p(`${key} = "10.0.0.2:26656"`).problems, [
        `config.toml: p2p.${key}: each peer must be "<node_id>@<host>:<port>" (the node id is missing), got "10.0.0.2:26656"`,
      ]);
      assert.deepEqual(p2p(`${key} = "${ID}@10.0.0.2"`).problems, [
        `config.toml: p2p.${key}: each peer must be "<node_id>@<host>:<port>", got "${ID}@10.0.0.2"`,
      ]);
      assert.deepEqual(p2p(`${key} = "${ID}@10.0.0.2:0"`).problems, [
        `config.toml: p2p.${key}: port must be between 1 and 65535, got "${ID}@10.0.0.2:0"`,
      ]);
    });

    it(`${key}: well-formed ids are accepted in either case and read as lower case`, () => {
      const c = p2p(`${key} = " ${ID.toUpperCase()}@10.0.0.2:26656 , ${ID}@node.example.org:1 "`);
      assert.deepEqual(c.problems, []);
      assert.deepEqual(key === 'seeds' ? c.config.p2p.seeds : c.config.p2p.persistentPeers, [
        { nodeId: ID, host: '10.0.0.2', port: 26656 },
        { nodeId: ID, host: 'node.example.org', port: 1 },
      ]);
    });
  }

  it('persistent_peers: the host and port of each entry are checked (IPv4, IPv6 in brackets, host names, 1-65535)', () => {
    const peers = (entry: string) => p2p(`persistent_peers = ${JSON.stringify(entry)}`);
    const label63 = `a${'b'.repeat(61)}c`;
    const good: Array<[string, string, number]> = [
      [`${ID}@[::1]:26656`, '::1', 26656],
      [`${ID}@[fe80::1:2]:1`, 'fe80::1:2', 1],
      [`${ID}@a:65535`, 'a', 65535],
      [`${ID}@node-1.example.org:26656`, 'node-1.example.org', 26656],
      [`${ID}@${label63}.io:2`, `${label63}.io`, 2],
      [`${ID}@1.2.3.4:80`, '1.2.3.4', 80],
      [`${ID}@n.a.b:3`, 'n.a.b', 3],
    ];
    for (const [entry, host, port] of good) {
      const c = peers(entry);
      assert.deepEqual(c.problems, [], entry);
      assert.deepEqual(c.config.p2p.persistentPeers, [{ nodeId: ID, host, port }], entry);
    }
    const shape = [
      `${ID}@:26656`,
      `${ID}@26656`,
      `${ID}@[::1]:266:56`,
      `${ID}@[not-v6]:26656`,
      `${ID}@[::1]:`,
      `${ID}@[::1]:2665x`,
      `${ID}@x[::1]:26656`,
      `${ID}@10.0.0.2:`,
      `${ID}@10.0.0.2:123456`,
      `${ID}@10.0.0.2: 26656`,
      `${ID}@10.0.0.2:26656x`,
      `${ID}@x10.0.0.2:26656:1`,
      `${ID}@-node.example.org:26656`,
      `${ID}@node-.example.org:26656`,
      `${ID}@node.-example.org:26656`,
      `${ID}@node.example-:26656`,
      `${ID}@node..example.org:26656`,
      `${ID}@${label63}d.io:2`,
      `${ID}@under_score:26656`,
    ];
    for (const entry of shape) {
      const c = peers(entry);
      assert.deepEqual(
        c.problems,
        [
          `config.toml: p2p.persistent_peers: each peer must be "<node_id>@<host>:<port>", got ${JSON.stringify(entry)}`,
        ],
        entry,
      );
      assert.deepEqual(c.config.p2p.persistentPeers, [], entry);
    }
    for (const entry of [`${ID}@10.0.0.2:65536`, `${ID}@[::1]:0`, `${ID}@10.0.0.2:99999`]) {
      assert.deepEqual(
        peers(entry).problems,
        [`config.toml: p2p.persistent_peers: port must be between 1 and 65535, got ${JSON.stringify(entry)}`],
        entry,
      );
    }
  });

  it('unconditional_peer_ids: a malformed node id is refused; good ones are read as lower case', () => {
    for (const [what, id] of malformed.filter(([w]) => w !== 'empty')) {
      const c = p2p(`unconditional_peer_ids = ${JSON.stringify(`${ID},${id}`)}`);
      assert.deepEqual(
        c.problems,
        [
          `config.toml: p2p.unconditional_peer_ids: each entry must be a node id of exactly 40 hex digits, got ${JSON.stringify(id.trim())}`,
        ],
        what,
      );
      assert.deepEqual(c.config.p2p.unconditionalPeerIds, [], what);
    }
    // A peer address is not a node id.
    assert.deepEqual(p2p(`unconditional_peer_ids = "${ID}@10.0.0.2:26656"`).problems, [
      `config.toml: p2p.unconditional_peer_ids: each entry must be a node id of exactly 40 hex digits, got "${ID}@10.0.0.2:26656"`,
    ]);
    const ok = p2p(`unconditional_peer_ids = "${ID.toUpperCase()}, ${ID}"`);
    assert.deepEqual(ok.problems, []);
    assert.deepEqual(ok.config.p2p.unconditionalPeerIds, [ID, ID]);
  });
});
