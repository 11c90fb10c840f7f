// Foundry's cast (from npm's @foundry-rs/cast-linux-amd64, installed into .tmp/cast by
// scripts/test-deps.sh, as the bench installs it) against a chain-local node, as a developer's shell
// script drives anvil: deploy with `cast send --create`, send and call, a revert decoded by cast,
// time warped with `cast rpc evm_increaseTime` / `evm_mine`, a snapshot and a revert, and a reset.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ANVIL_PACKAGE, CAST_PACKAGE, castBinary, FOUNDRY_VERSION } from '../../bench/targets.js';
import { compile, PROBE_SOURCE } from './contracts.js';
import { DEV_ADDRESSES, DEV_KEYS, initLocalHome, type RunningNode, repoRoot, startNode } from './harness.js';

interface CastResult {
  code: number;
  out: string;
  err: string;
}

function cast(args: string[]): Promise<CastResult> {
  return new Promise((resolve) => {
    execFile(
      castBinary(),
      args,
      { timeout: 60_000, env: { ...process.env, NO_COLOR: '1', FOUNDRY_DISABLE_NIGHTLY_WARNING: '1' } },
      (err, stdout, stderr) => {
        const code = err ? ((err as { code?: unknown }).code as number) || 1 : 0;
        resolve({ code: typeof code === 'number' ? code : 1, out: stdout.trim(), err: stderr.trim() });
      },
    );
  });
}

async function ok(args: string[]): Promise<string> {
  const r = await cast(args);
  assert.equal(r.code, 0, `cast ${args.join(' ')}: ${r.err || r.out}`);
  return r.out;
}

describe('cast against chain-local', { timeout: 300_000 }, () => {
  let home: string;
  let node: RunningNode;
  let rpc: string[];
  let probe: string;
  const key = DEV_KEYS[3]!;
  const me = DEV_ADDRESSES[3]!;

  before(async () => {
    castBinary(); // installs it if test-deps did not (a clear error if npm cannot)
    const init = await initLocalHome({
      extra: (config) => {
        if (config.consensus) config.consensus.create_empty_blocks_interval = '3600s';
      },
    });
    home = init.home;
    node = await startNode(home, init.ports, [], 0n);
    rpc = ['--rpc-url', node.ethUrl];
  });

  after(async () => {
    await node?.stop();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it('test-deps installs the cast and anvil the bench uses (same packages and version)', () => {
    const script = readFileSync(join(repoRoot(), 'scripts', 'test-deps.sh'), 'utf8');
    assert.match(script, /^for tool in cast anvil; do$/m);
    // pkg="@foundry-rs/$tool-linux-amd64" gives each package the bench installs.
    const pkg = /^\s*pkg="([^"]+)"$/m.exec(script)?.[1];
    assert.equal(pkg?.replace('$tool', 'cast'), CAST_PACKAGE);
    assert.equal(pkg?.replace('$tool', 'anvil'), ANVIL_PACKAGE);
    assert.match(script, new RegExp(`^FOUNDRY_VERSION="${FOUNDRY_VERSION.replaceAll('.', '\\.')}"$`, 'm'));
  });

  it('deploys with cast send --create, sends, calls and reads the receipt', async () => {
    assert.equal(await ok(['chain-id', ...rpc]), '31337');
    const bytecode = compile(PROBE_SOURCE).Probe!.bytecode;
    const deployed = JSON.parse(
      await ok(['send', ...rpc, '--private-key', key, '--json', '--create', bytecode]),
    ) as {
      status: string;
      contractAddress: string;
    };
    assert.equal(deployed.status, '0x1');
    probe = deployed.contractAddress;
    assert.notEqual(await ok(['code', probe, ...rpc]), '0x');
    const sent = JSON.parse(
      await ok(['send', ...rpc, '--private-key', key, '--json', probe, 'bump(string)', 'from cast']),
    ) as { status: string; transactionHash: string; logs: unknown[] };
    assert.equal(sent.status, '0x1');
    assert.equal(sent.logs.length, 1);
    assert.equal(await ok(['call', probe, 'counter()(uint256)', ...rpc]), '1');
    const receipt = await ok(['receipt', sent.transactionHash, 'status', ...rpc]);
    assert.match(receipt, /^(true|1( \(success\))?)$/); // cast 1.7 prints true
    const before = BigInt(await ok(['balance', DEV_ADDRESSES[2]!, ...rpc]));
    await ok(['send', ...rpc, '--private-key', key, DEV_ADDRESSES[2]!, '--value', '12345']);
    assert.equal(BigInt(await ok(['balance', DEV_ADDRESSES[2]!, ...rpc])), before + 12345n);
  });

  it('a revert is refused at estimation with its reason, and a custom error with its data', async () => {
    const reason = await cast(['send', ...rpc, '--private-key', key, probe, 'failWithReason()']);
    assert.notEqual(reason.code, 0);
    assert.match(reason.err, /probe says no/);
    const custom = await cast(['call', probe, 'failWithCustom()', ...rpc]);
    assert.notEqual(custom.code, 0);
    // NotAllowed(42): selector then the code, as geth hands the revert data to cast.
    assert.match(custom.err, /0x[0-9a-f]{8}0{62}2a/);
  });

  it('warps time with evm_increaseTime and evm_mine, and snapshots and reverts with cast rpc', async () => {
    const t0 = Number(await ok(['block', 'latest', '--field', 'timestamp', ...rpc]));
    await ok(['rpc', 'evm_increaseTime', '86400', ...rpc]);
    await ok(['rpc', 'evm_mine', ...rpc]);
    const t1 = Number(await ok(['block', 'latest', '--field', 'timestamp', ...rpc]));
    assert.ok(t1 >= t0 + 86_400, `${t1} >= ${t0} + 86400`);

    const snap = JSON.parse(await ok(['rpc', 'evm_snapshot', ...rpc])) as string;
    const height = Number(await ok(['block-number', ...rpc]));
    const nonce = Number(await ok(['nonce', me, ...rpc]));
    await ok(['send', ...rpc, '--private-key', key, probe, 'bump(string)', 'to be undone']);
    assert.equal(await ok(['call', probe, 'counter()(uint256)', ...rpc]), '2');
    assert.equal(await ok(['rpc', 'evm_revert', snap, ...rpc]), 'true');
    assert.equal(Number(await ok(['block-number', ...rpc])), height);
    assert.equal(await ok(['call', probe, 'counter()(uint256)', ...rpc]), '1');
    assert.equal(Number(await ok(['nonce', me, ...rpc])), nonce);
    // Blocks are made again after the revert.
    await ok(['send', ...rpc, '--private-key', key, probe, 'bump(string)', 'again']);
    assert.equal(await ok(['call', probe, 'counter()(uint256)', ...rpc]), '2');
  });

  it('anvil_reset brings the chain back to its genesis', async () => {
    assert.equal(await ok(['rpc', 'anvil_reset', ...rpc]), 'null');
    assert.equal(await ok(['block-number', ...rpc]), '0');
    assert.equal(await ok(['code', probe, ...rpc]), '0x');
    assert.equal(await ok(['nonce', me, ...rpc]), '0');
  });
});
