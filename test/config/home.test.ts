import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  acquireHomeLock,
  DEFAULT_DEV_MNEMONIC,
  defaultHome,
  deriveDevAccounts,
  HomeLockedError,
  homeLockHolder,
  homePaths,
  isHomeLocked,
  MnemonicError,
  releaseHomeLock,
} from '@noded/config';

const tmp = mkdtempSync(join(tmpdir(), 'noded-home-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

describe('home', () => {
  it('has the CometBFT layout', () => {
    const p = homePaths('/h');
    assert.equal(p.configToml, '/h/config/config.toml');
    assert.equal(p.genesis, '/h/config/genesis.json');
    assert.equal(p.privValidatorKey, '/h/config/priv_validator_key.json');
    assert.equal(p.addrBook, '/h/config/addrbook.json');
    assert.equal(p.privValidatorState, '/h/data/priv_validator_state.json');
    assert.equal(p.pidFile, '/h/data/noded.pid');
    assert.equal(p.csWal, '/h/data/cs.wal');
    assert.equal(p.applicationDb, '/h/data/application.db');
    assert.equal(p.txIndexDb, '/h/data/tx_index.db');
    assert.equal(p.logFile, '/h/logs/noded.log');
    assert.equal(defaultHome({ NODED_HOME: '/x/y' }), '/x/y');
    assert.match(defaultHome({}), /\.noded$/);
  });

  it('the lock is exclusive, released by its holder only, and a stale pid file is replaced', async () => {
    const home = join(tmp, 'lock');
    assert.equal(isHomeLocked(home), false);
    acquireHomeLock(home);
    assert.equal(readFileSync(homePaths(home).pidFile, 'utf8').trim(), String(process.pid));
    assert.equal(homeLockHolder(home), process.pid);
    assert.throws(() => acquireHomeLock(home), HomeLockedError);
    releaseHomeLock(home);
    assert.equal(existsSync(homePaths(home).pidFile), false);

    // A live process holding the lock: refused, and its lock is not released by us.
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { stdio: 'ignore' });
    try {
      writeFileSync(homePaths(home).pidFile, `${child.pid}\n`);
      assert.throws(
        () => acquireHomeLock(home),
        (e: unknown) => e instanceof HomeLockedError && e.pid === child.pid,
      );
      releaseHomeLock(home);
      assert.equal(homeLockHolder(home), child.pid);
    } finally {
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
    }
    // Now the pid is dead: the file is stale and acquiring replaces it.
    assert.equal(isHomeLocked(home), false);
    acquireHomeLock(home);
    assert.equal(homeLockHolder(home), process.pid);
    releaseHomeLock(home);
    mkdirSync(join(tmp, 'x'), { recursive: true });
  });
});

describe('dev accounts', () => {
  it('derive the Hardhat/anvil accounts from the default mnemonic', () => {
    const accounts = deriveDevAccounts(DEFAULT_DEV_MNEMONIC, 20);
    assert.equal(accounts.length, 20);
    assert.deepEqual(accounts[0], {
      address: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
      privateKey: '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
    });
    assert.equal(accounts[19]!.address, '0x8626f6940E2eb28930eFb4CeF49B2d1F2C9C1199');
    assert.equal(new Set(accounts.map((a) => a.address)).size, 20);
    // Extra whitespace is normalised as wallets do.
    assert.deepEqual(
      deriveDevAccounts(`  ${DEFAULT_DEV_MNEMONIC.replace(/ /g, '   ')} `, 1),
      accounts.slice(0, 1),
    );
  });

  it('refuse a mnemonic with a bad checksum or unknown words', () => {
    assert.throws(
      () => deriveDevAccounts('test test test test test test test test test test test test', 1),
      MnemonicError,
    );
    assert.throws(() => deriveDevAccounts('hello world', 1), /got 2 words/);
  });
});
