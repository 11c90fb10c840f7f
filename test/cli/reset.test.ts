import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { homePaths } from '@noded/config';
import { spawnService, waitForService } from '../cluster/processes.js';
import { removeDir, runCli, snapshot, tempDir, useFreePorts } from './helpers.js';

const root = tempDir();
const template = join(root, 'template');
let n = 0;

/** An initialised home with blockchain data under data/ and a validator state at height 42. */
function usedHome(): string {
  const home = join(root, `home-${++n}`);
  cpSync(template, home, { recursive: true });
  const d = homePaths(home);
  for (const db of [d.blockstoreDb, d.stateDb, d.applicationDb, d.txIndexDb, d.csWal]) {
    mkdirSync(db, { recursive: true });
    writeFileSync(join(db, '000001.log'), 'data');
  }
  writeFileSync(join(d.data, 'evidence.db'), 'x');
  writeFileSync(d.privValidatorState, '{"height":"42","round":1,"step":3}\n');
  return home;
}

before(async () => {
  const r = await runCli(['init', 'full', '--chain-id', 'chain-local', '--home', template]);
  assert.equal(r.code, 0, r.stderr);
});
after(() => removeDir(root));

describe('noded unsafe-reset-all / tendermint unsafe-reset-all', () => {
  for (const cmd of [['unsafe-reset-all'], ['tendermint', 'unsafe-reset-all']]) {
    it(`${cmd.join(' ')} --yes deletes data/, resets the validator state, keeps config/`, async () => {
      const home = usedHome();
      const config = snapshot(join(home, 'config'));
      const r = await runCli([...cmd, '--yes', '--home', home]);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(readdirSync(homePaths(home).data), ['priv_validator_state.json']);
      assert.deepEqual(JSON.parse(readFileSync(homePaths(home).privValidatorState, 'utf8')), {
        height: '0',
        round: 0,
        step: 0,
      });
      assert.deepEqual(snapshot(join(home, 'config')), config);
      for (const e of [
        'application.db',
        'blockstore.db',
        'cs.wal',
        'evidence.db',
        'state.db',
        'tx_index.db',
      ]) {
        assert.ok(r.stdout.includes(`removed data/${e}\n`), `${e} not reported:\n${r.stdout}`);
      }
      assert.match(r.stdout, /reset data\/priv_validator_state\.json to height 0/);
    });
  }

  it('refuses without --yes when there is no terminal, and changes nothing', async () => {
    const home = usedHome();
    const before = snapshot(home);
    const r = await runCli(['unsafe-reset-all', '--home', home]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /pass --yes .*nothing was removed/);
    assert.deepEqual(snapshot(home), before);
  });

  it('refuses while a node holds the home lock, and changes nothing', async () => {
    const home = usedHome();
    writeFileSync(homePaths(home).pidFile, `${process.pid}\n`);
    const before = snapshot(home);
    const r = await runCli(['tendermint', 'unsafe-reset-all', '--yes', '--home', home]);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      new RegExp(
        `a node \\(pid ${process.pid}\\) is running on this home; stop it first \\(nothing was removed\\)`,
      ),
    );
    assert.deepEqual(snapshot(home), before);
  });

  it('refuses while cluster services run on the home, naming each, and changes nothing', async () => {
    const home = usedHome();
    await useFreePorts(home);
    // a real `noded service metrics` (the lightest service: it opens nothing under data/)
    const svc = spawnService('metrics', home, {
      NODED_METRICS_TARGETS:
        'executor=127.0.0.1:1,consensus=127.0.0.1:1,state-store=127.0.0.1:1,rpc-edge=127.0.0.1:1',
    });
    try {
      await waitForService(svc, /noded service metrics is running \(pid (\d+)\)/, 60_000);
      const pid = svc.proc.pid;
      const before = snapshot(home);
      const r = await runCli(['unsafe-reset-all', '--yes', '--home', home]);
      assert.equal(r.code, 1);
      assert.match(
        r.stderr,
        new RegExp(
          `data/services: cluster services are running on this home \\(metrics pid ${pid}\\); stop them first \\(nothing was removed\\)`,
        ),
      );
      assert.deepEqual(snapshot(home), before);
    } finally {
      assert.equal(await svc.stop(), 0, svc.output());
    }
    // the service removed its mark when it stopped: the reset goes ahead
    assert.deepEqual(readdirSync(homePaths(home).servicesDir), []);
    const r = await runCli(['unsafe-reset-all', '--yes', '--home', home]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /removed data\/services/);
  });

  it('removes a stale lock left by a dead node', async () => {
    const home = usedHome();
    const dead = spawnSync(process.execPath, [
      '-e',
      'process.stdout.write(String(process.pid))',
    ]).stdout.toString();
    writeFileSync(homePaths(home).pidFile, `${dead}\n`);
    const r = await runCli(['unsafe-reset-all', '--yes', '--home', home]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(existsSync(homePaths(home).pidFile), false);
    assert.match(r.stdout, /removed data\/noded\.pid/);
  });

  it('refuses a directory that is not a home', async () => {
    const r = await runCli(['unsafe-reset-all', '--yes', '--home', join(root, 'nothing')]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /no node home at .*nothing/);
    assert.equal(existsSync(join(root, 'nothing')), false);
  });
});
