// The address book: which addresses it takes, how it picks whom to dial, and its file.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { AddressBook, isRoutable, MAX_FAILED_ATTEMPTS, parsePeerAddress } from '@noded/p2p';
import { silentLogger } from '@noded/types';
import { type Logged, recordingLogger } from './helpers.js';

const SELF = 'f'.repeat(40);
const id = (n: number) => n.toString(16).padStart(40, '0');
const dir = mkdtempSync(join(tmpdir(), 'noded-addrbook-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('AddressBook', () => {
  it('parses and refuses peer addresses like persistent_peers', () => {
    assert.deepEqual(parsePeerAddress(`${id(1).toUpperCase()}@10.0.0.1:26656`), {
      nodeId: id(1),
      host: '10.0.0.1',
      port: 26656,
    });
    assert.deepEqual(parsePeerAddress(`${id(2)}@[2001:db8::1]:26656`), {
      nodeId: id(2),
      host: '2001:db8::1',
      port: 26656,
    });
    for (const bad of [
      `${id(1)}@host:0`,
      `${id(1)}@host:70000`,
      `abc@host:1`,
      `${id(1)}host:1`,
      `${id(1)}@:1`,
      `${id(1)}@a b:1`,
    ])
      assert.equal(parsePeerAddress(bad), undefined, bad);
  });

  it('knows routable from private, loopback and link-local addresses', () => {
    for (const h of ['8.8.8.8', '172.32.0.1', 'seed.example.com', '2001:4860::8888'])
      assert.equal(isRoutable(h), true, h);
    for (const h of [
      '127.0.0.2',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.1.1',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      'fd00::1',
      'fe80::1',
      'localhost',
    ])
      assert.equal(isRoutable(h), false, h);
  });

  it('refuses itself, bad ports, unspecified hosts and (strict) private addresses, naming why', () => {
    const strict = new AddressBook({ strict: true, selfId: SELF, logger: silentLogger });
    assert.match(strict.add({ nodeId: SELF, host: '8.8.8.8', port: 1 }, 'x')!, /node itself/);
    assert.match(strict.add({ nodeId: id(1), host: '8.8.8.8', port: 0 }, 'x')!, /port 0 is out of range/);
    assert.match(strict.add({ nodeId: id(1), host: '0.0.0.0', port: 1 }, 'x')!, /cannot be dialled/);
    assert.match(
      strict.add({ nodeId: id(1), host: '127.0.0.2', port: 1 }, 'x')!,
      /not a routable address \(addr_book_strict = true\)/,
    );
    assert.match(strict.add({ nodeId: 'zz', host: '8.8.8.8', port: 1 }, 'x')!, /not 40 hex/);
    assert.equal(strict.size, 0);
    const loose = new AddressBook({ strict: false, selfId: SELF, logger: silentLogger });
    assert.equal(loose.add({ nodeId: id(1), host: '127.0.0.2', port: 26656 }, 'x'), undefined);
    assert.equal(loose.size, 1);
  });

  it('lets only the node itself move its entry; a peer cannot redirect it', () => {
    const b = new AddressBook({ strict: false, selfId: SELF, logger: silentLogger });
    b.add({ nodeId: id(1), host: '127.0.0.2', port: 1 }, 'inbound');
    b.add({ nodeId: id(1), host: '127.0.0.66', port: 6 }, id(9));
    assert.equal(b.get(id(1))!.host, '127.0.0.2');
    b.add({ nodeId: id(1), host: '127.0.0.3', port: 2 }, 'inbound');
    assert.deepEqual([b.get(id(1))!.host, b.get(id(1))!.port], ['127.0.0.3', 2]);
  });

  it('picks candidates outside the exclusions, backs off failed ones, drops one that never worked', () => {
    let now = 1_000_000;
    const b = new AddressBook({ strict: false, selfId: SELF, logger: silentLogger, now: () => now });
    for (let i = 1; i <= 5; i++) b.add({ nodeId: id(i), host: `127.0.0.${i + 1}`, port: 26656 }, 'x');
    const all = b.candidates(10, new Set([id(1)])).map((a) => a.nodeId);
    assert.deepEqual(all.sort(), [id(2), id(3), id(4), id(5)]);
    assert.equal(b.candidates(2, new Set()).length, 2);
    b.markAttempt(id(2));
    b.markFailed(id(2));
    assert.ok(!b.candidates(10, new Set()).some((a) => a.nodeId === id(2)), 'waits after a failed dial');
    now += 30_000;
    assert.ok(
      b.candidates(10, new Set()).some((a) => a.nodeId === id(2)),
      'tried again after 30 s',
    );
    b.markGood(id(3));
    assert.equal(b.candidates(1, new Set())[0]!.nodeId, id(3), 'an address that worked comes first');
    for (let i = 1; i < MAX_FAILED_ATTEMPTS; i++) b.markFailed(id(2));
    assert.equal(b.has(id(2)), false);
    for (let i = 0; i < MAX_FAILED_ATTEMPTS + 2; i++) b.markFailed(id(3));
    assert.equal(b.has(id(3)), true, 'an address that once worked stays');
  });

  it('keeps at most maxSize entries, evicting the most failed first', () => {
    const b = new AddressBook({ strict: false, selfId: SELF, logger: silentLogger, maxSize: 3 });
    for (let i = 1; i <= 3; i++) b.add({ nodeId: id(i), host: '127.0.0.2', port: i }, 'x');
    b.markFailed(id(2));
    b.add({ nodeId: id(4), host: '127.0.0.2', port: 4 }, 'x');
    assert.equal(b.size, 3);
    assert.equal(b.has(id(2)), false);
    assert.equal(b.has(id(4)), true);
  });

  it('saves atomically and loads back with its history', () => {
    const file = join(dir, 'book1.json');
    const b = new AddressBook({ file, strict: false, selfId: SELF, logger: silentLogger });
    b.add({ nodeId: id(1), host: '127.0.0.2', port: 26656 }, 'seed');
    b.markAttempt(id(1));
    b.markGood(id(1));
    b.save();
    assert.equal(existsSync(`${file}.tmp`), false);
    const again = new AddressBook({ file, strict: false, selfId: SELF, logger: silentLogger });
    assert.equal(again.size, 1);
    assert.ok(again.get(id(1))!.lastSuccessMs > 0);
    assert.equal(again.get(id(1))!.source, 'seed');
  });

  it('moves a corrupt book aside with a warning naming the file, and drops bad entries one by one', () => {
    const file = join(dir, 'book2.json');
    writeFileSync(file, '{"addrs": [ oops');
    const logs: Logged[] = [];
    const b = new AddressBook({ file, strict: false, selfId: SELF, logger: recordingLogger(logs) });
    assert.equal(b.size, 0);
    assert.equal(existsSync(`${file}.corrupt`), true);
    assert.equal(existsSync(file), false);
    assert.ok(logs.some((l) => /not valid JSON/.test(l.msg) && l.obj.file === file));

    const file3 = join(dir, 'book3.json');
    writeFileSync(
      file3,
      JSON.stringify({
        addrs: [
          { nodeId: id(1), host: '127.0.0.2', port: 1 },
          { nodeId: id(2), host: '127.0.0.2', port: 99999 },
          { host: 'x' },
        ],
      }),
    );
    const logs3: Logged[] = [];
    const b3 = new AddressBook({ file: file3, strict: false, selfId: SELF, logger: recordingLogger(logs3) });
    assert.equal(b3.size, 1);
    const dropped = logs3.filter((l) => l.msg === 'address book entry dropped').map((l) => l.obj.reason);
    assert.deepEqual(dropped, ['port 99999 is out of range', 'nodeId, host and port are required']);
    assert.equal(readFileSync(file3, 'utf8').includes('99999'), true, 'the file is not rewritten on load');
  });
});
