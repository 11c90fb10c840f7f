// Slashing and jailing on a real network: 5 validators and a sixth node written by `noded testnet`
// (chain-local: validator i bonded with 10 BTC by dev account i), small liveness params. node5 runs
// node4's validator key, so that key double-signs: the evidence is committed, node4's stake drops by
// exactly slash_fraction_double_sign, it is tombstoned and leaves /validators. Then node3 is
// stopped: it is jailed for downtime (slashed by slash_fraction_downtime), leaves the set, and once
// restarted and past downtime_jail_duration its operator unjails it with ethers and it signs again.
// The chain keeps committing throughout (4 of 5, then 3 of 4 validators online).
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_DEV_MNEMONIC, initialValidatorStateJson } from '@noded/config';
import { Contract, HDNodeWallet, JsonRpcProvider, parseEther } from 'ethers';
import { createNetwork, heightOf, NETWORK_UP_MS, type Network, rpc, waitFor, waitHeight } from './network.js';

const POOL = '0x7b7c000000000000000000000000000000000011';
const BTC_TOKEN = '0x7b7c000000000000000000000000000000000000';
const ABI = [
  'function unjail()',
  'function validator(address operator) view returns (bytes32 consensusPubKey, string moniker, uint256 bonded, uint256 votingPower, bool jailed, uint16 commissionBps)',
  'function signingInfo(address operator) view returns (address consensusAddress, uint256 startHeight, uint256 indexOffset, uint256 jailedUntil, bool tombstoned, uint256 missedBlocks)',
];
const JAIL_SECONDS = 15n;
const HONEST = [0, 1, 2];

const devWallet = (i: number) =>
  HDNodeWallet.fromPhrase(DEFAULT_DEV_MNEMONIC, undefined, `m/44'/60'/0'/0/${i}`);

/** The validator addresses (hex, upper case) in /validators at a height. */
async function setAt(net: Network, height: number): Promise<Map<string, bigint>> {
  const r = await rpc(net.nodes[0]!.cometUrl, `/validators?height=${height}&per_page=100`);
  return new Map(
    (r.validators as Array<{ address: string; voting_power: string }>).map((v) => [
      v.address,
      BigInt(v.voting_power),
    ]),
  );
}

/** The validator addresses whose precommit for block `height` is in its commit. */
async function signersOf(net: Network, height: number): Promise<string[]> {
  const r = await rpc(net.nodes[0]!.cometUrl, `/commit?height=${height}`);
  const sigs = (
    r.signed_header as { commit: { signatures: Array<{ block_id_flag: number; validator_address: string }> } }
  ).commit.signatures;
  return sigs.filter((s) => s.block_id_flag === 2).map((s) => s.validator_address);
}

/** The first height from `from` whose FinalizeBlock events hold a `slash` with this reason. */
async function slashEventHeight(net: Network, from: number, reason: string): Promise<number> {
  for (let h = from; h <= (await heightOf(net.nodes[0]!)); h++) {
    const r = await rpc(net.nodes[0]!.cometUrl, `/block_results?height=${h}`);
    const events = (r.finalize_block_events ?? []) as Array<{
      type: string;
      attributes: Array<{ key: string; value: string }>;
    }>;
    if (
      events.some(
        (e) => e.type === 'slash' && e.attributes.some((a) => a.key === 'reason' && a.value === reason),
      )
    )
      return h;
  }
  throw new Error(`no slash event with reason ${reason} from height ${from}`);
}

async function rest(net: Network, path: string): Promise<Record<string, unknown>> {
  const res = await fetch(`http://${net.nodes[0]!.ip}:1317${path}`, { signal: AbortSignal.timeout(10_000) });
  assert.equal(res.status, 200, `${path}: ${res.status}`);
  return (await res.json()) as Record<string, unknown>;
}

describe('slashing and jailing on a 5-validator network', { timeout: 600_000 }, () => {
  let net: Network;
  let provider: JsonRpcProvider;
  let pool: Contract;
  let token: Contract;
  const addressOf: string[] = [];

  before(() => {
    net = createNetwork({ validators: 5, nonValidators: 1 });
    const text = readFileSync(join(net.nodes[0]!.home, 'config', 'genesis.json'), 'utf8');
    const g = JSON.parse(text);
    Object.assign(g.app_state.staking.params, {
      signed_blocks_window: '10',
      min_signed_per_window: '0.5',
      slash_fraction_downtime: '0.01',
      slash_fraction_double_sign: '0.05',
      downtime_jail_duration: JAIL_SECONDS.toString(),
    });
    for (const n of net.nodes)
      writeFileSync(join(n.home, 'config', 'genesis.json'), `${JSON.stringify(g, null, 2)}\n`);
    for (let i = 0; i < 5; i++)
      addressOf.push(
        JSON.parse(readFileSync(join(net.nodes[i]!.home, 'config', 'priv_validator_key.json'), 'utf8'))
          .address,
      );
    // node5 signs with node4's validator key, from a fresh double-sign guard.
    copyFileSync(
      join(net.nodes[4]!.home, 'config', 'priv_validator_key.json'),
      join(net.nodes[5]!.home, 'config', 'priv_validator_key.json'),
    );
    writeFileSync(join(net.nodes[5]!.home, 'data', 'priv_validator_state.json'), initialValidatorStateJson());
    for (const n of net.nodes) net.start(n.index);
    provider = new JsonRpcProvider(net.nodes[0]!.ethUrl, undefined, {
      staticNetwork: true,
      cacheTimeout: -1,
    });
    pool = new Contract(POOL, ABI, provider);
    token = new Contract(BTC_TOKEN, ['function totalSupply() view returns (uint256)'], provider);
  });
  after(async () => {
    provider?.destroy();
    await net?.cleanup();
  });

  it('a double-signing key is slashed by exactly the fraction, tombstoned, and leaves the set', async () => {
    await waitHeight(net, HONEST, 2, NETWORK_UP_MS);
    const op4 = devWallet(4).address;
    await waitFor(
      'node4 jailed for its double sign',
      async () => {
        try {
          return (await pool.validator!(op4)).jailed as boolean;
        } catch {
          return false; // JSON-RPC not up yet
        }
      },
      240_000,
      net,
    );
    const h = await slashEventHeight(net, 2, 'double_sign');
    const before = await pool.validator!(op4, { blockTag: h - 1 });
    const after = await pool.validator!(op4, { blockTag: h });
    assert.equal(before.bonded, parseEther('10'));
    assert.equal(before.jailed, false);
    assert.equal(after.bonded, parseEther('10') - parseEther('0.5'), '5% of 10 BTC, to the wei');
    assert.equal(after.jailed, true);
    assert.equal(after.votingPower, 0n);
    const burned = parseEther('0.5');
    assert.equal(
      (await token.totalSupply!({ blockTag: h - 1 })) - (await token.totalSupply!({ blockTag: h })),
      burned,
      'the slashed BTC leaves the supply',
    );
    assert.equal(
      (await provider.getBalance(POOL, h - 1)) - (await provider.getBalance(POOL, h)),
      burned,
      'and the pool',
    );
    // Updates of H apply at H + 2: node4's key is in the set at H + 1 and gone at H + 2.
    await waitHeight(net, HONEST, h + 3, 60_000);
    assert.ok((await setAt(net, h + 1)).has(addressOf[4]!));
    assert.equal((await setAt(net, h + 2)).has(addressOf[4]!), false);
    const si = (await rest(net, `/cosmos/slashing/v1beta1/signing_infos/${addressOf[4]}`))
      .val_signing_info as Record<string, unknown>;
    assert.equal(si.tombstoned, true);
    assert.equal(si.jailed_until, '9999-12-31T23:59:59Z');
    const all = (await rest(net, '/cosmos/slashing/v1beta1/signing_infos')).info as Array<
      Record<string, unknown>
    >;
    assert.deepEqual(
      all.map((i) => [i.address, i.tombstoned]),
      addressOf.map((a, i) => [a, i === 4]),
    );
    const bad = await fetch(`http://${net.nodes[0]!.ip}:1317/cosmos/slashing/v1beta1/signing_infos/zz`, {
      signal: AbortSignal.timeout(10_000),
    });
    assert.equal(bad.status, 400);
    assert.match(((await bad.json()) as { message: string }).message, /invalid consensus address "zz"/);
    await assert.rejects(
      pool.unjail!.staticCall({ from: op4 }),
      /tombstoned \(double-signed\) and can never be unjailed/,
    );
    // Both copies of the key are out of the set now; stop them.
    await net.kill(4);
    await net.kill(5);
  });

  it('a stopped validator is jailed for downtime, unjails after the jail time and signs again', async () => {
    const op3 = devWallet(3).address;
    const stoppedAt = await heightOf(net.nodes[0]!);
    await net.kill(3);
    await waitFor(
      'node3 jailed for downtime',
      async () => (await pool.validator!(op3)).jailed as boolean,
      180_000,
      net,
    );
    const h = await slashEventHeight(net, stoppedAt, 'missing_signature');
    const v = await pool.validator!(op3, { blockTag: h });
    assert.equal(v.bonded, parseEther('10') - parseEther('0.1'), '1% of 10 BTC, to the wei');
    await waitHeight(net, HONEST, h + 3, 60_000);
    assert.equal((await setAt(net, h + 2)).has(addressOf[3]!), false, 'node3 left the set');
    const params = (await rest(net, '/cosmos/slashing/v1beta1/params')).params as Record<string, string>;
    assert.equal(params.signed_blocks_window, '10');
    assert.equal(params.downtime_jail_duration, `${JAIL_SECONDS}s`);

    // Too early: refused with the time.
    const operator = devWallet(3).connect(provider);
    const until = (await pool.signingInfo!(op3)).jailedUntil as bigint;
    const early = pool.connect(operator) as Contract;
    await assert.rejects(early.unjail!.staticCall(), new RegExp(`is jailed until ${until}`));

    net.start(3);
    await waitFor(
      'a block past the jail time',
      async () => BigInt((await provider.getBlock('latest'))!.timestamp) >= until,
      120_000,
      net,
    );
    const tx = await early.unjail!({ gasLimit: 200_000n });
    const receipt = await tx.wait(1, 60_000);
    assert.equal(receipt.status, 1);
    const u = receipt.blockNumber as number;
    await waitHeight(net, HONEST, u + 2, 60_000);
    assert.equal((await setAt(net, u + 2)).get(addressOf[3]!), 9n, 'back with power floor(9.9 BTC)');
    // node3 (restarted and caught up) signs again.
    await waitFor(
      'node3 signing a commit',
      async () => {
        const top = await heightOf(net.nodes[0]!);
        for (let x = u + 2; x < top; x++) if ((await signersOf(net, x)).includes(addressOf[3]!)) return true;
        return false;
      },
      120_000,
      net,
    );
    // The chain went on all along.
    const top = await heightOf(net.nodes[0]!);
    await waitHeight(net, [...HONEST, 3], top + 2, 60_000);
  });
});
