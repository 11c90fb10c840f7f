// Stake sets the validator set on a real network: 4 validators and a full node written by
// `noded testnet` (chain-local: validator i bonded by dev account i), max_validators 4. The full
// node's operator bonds it through the pool precompile with ethers; two heights after the block
// that did it, /validators lists it (and no longer the weakest genesis validator), and it signs
// blocks. Undelegating below the last active power drops it and brings the other back. The chain
// keeps committing throughout.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_DEV_MNEMONIC } from '@noded/config';
import { Contract, HDNodeWallet, JsonRpcProvider, parseEther } from 'ethers';
import { createNetwork, heightOf, NETWORK_UP_MS, type Network, rpc, waitFor, waitHeight } from './network.js';

const POOL = '0x7b7c000000000000000000000000000000000011';
const ABI = [
  'function createValidator(bytes32 consensusPubKey, string moniker, uint16 commissionBps) payable',
  'function undelegate(address validator, uint256 amount) returns (uint256)',
  'function validator(address operator) view returns (bytes32 consensusPubKey, string moniker, uint256 bonded, uint256 votingPower, bool jailed, uint16 commissionBps)',
  'function validators() view returns (address[])',
];
const ALL = [0, 1, 2, 3, 4];

interface ValidatorJson {
  address: string;
  pub_key: { value: string };
  voting_power: string;
}

/** A REST (:1317) answer of node0. */
async function rest(net: Network, path: string): Promise<Record<string, unknown>> {
  const res = await fetch(`http://${net.nodes[0]!.ip}:1317${path}`, { signal: AbortSignal.timeout(10_000) });
  assert.equal(res.status, 200, `${path}: ${res.status}`);
  return (await res.json()) as Record<string, unknown>;
}

interface RestValidator {
  operator_address: string;
  consensus_pubkey: { '@type': string; key: string };
  status: string;
  unbonding_time: string;
  tokens: string;
  description: { moniker: string };
  commission: { commission_rates: { rate: string } };
}

async function restValidator(net: Network, pub: string, height: number): Promise<RestValidator | undefined> {
  const r = await fetch(`http://${net.nodes[0]!.ip}:1317/cosmos/staking/v1beta1/validators`, {
    headers: { 'x-cosmos-block-height': String(height) },
    signal: AbortSignal.timeout(10_000),
  });
  assert.equal(r.status, 200);
  const list = ((await r.json()) as { validators: RestValidator[] }).validators;
  return list.find((v) => v.consensus_pubkey.key === pub);
}

async function validatorsAt(net: Network, height: number): Promise<Map<string, bigint>> {
  const r = await rpc(net.nodes[0]!.cometUrl, `/validators?height=${height}&per_page=100`);
  return new Map((r.validators as ValidatorJson[]).map((v) => [v.pub_key.value, BigInt(v.voting_power)]));
}

/** The validator addresses whose precommit for the block is in block `height + 1`'s last commit. */
async function signersOf(net: Network, height: number): Promise<string[]> {
  const r = await rpc(net.nodes[0]!.cometUrl, `/commit?height=${height}`);
  const sigs = (
    r.signed_header as { commit: { signatures: Array<{ block_id_flag: number; validator_address: string }> } }
  ).commit.signatures;
  return sigs.filter((s) => s.block_id_flag === 2).map((s) => s.validator_address);
}

describe('validation stake on a 4-validator network', { timeout: 480_000 }, () => {
  let net: Network;
  let provider: JsonRpcProvider;
  let pool: Contract;
  const operator = HDNodeWallet.fromPhrase(DEFAULT_DEV_MNEMONIC, undefined, "m/44'/60'/0'/0/4");
  let key4: { pub: string; address: string };
  let genesisKeys: string[];

  before(() => {
    net = createNetwork({ validators: 4, nonValidators: 1 });
    // One genesis, byte for byte in every home: at most 4 active validators.
    const text = readFileSync(join(net.nodes[0]!.home, 'config', 'genesis.json'), 'utf8');
    const g = JSON.parse(text);
    g.app_state.staking.params.max_validators = '4';
    for (const n of net.nodes)
      writeFileSync(join(n.home, 'config', 'genesis.json'), `${JSON.stringify(g, null, 2)}\n`);
    genesisKeys = g.validators.map((v: { pub_key: { value: string } }) => v.pub_key.value);
    const pv = JSON.parse(
      readFileSync(join(net.nodes[4]!.home, 'config', 'priv_validator_key.json'), 'utf8'),
    );
    key4 = { pub: pv.pub_key.value, address: pv.address };
    for (const i of ALL) net.start(i);
    provider = new JsonRpcProvider(net.nodes[0]!.ethUrl, undefined, {
      staticNetwork: true,
      cacheTimeout: -1,
    });
    pool = new Contract(POOL, ABI, operator.connect(provider));
  });
  after(async () => {
    provider?.destroy();
    await net?.cleanup();
  });

  it('the genesis validators are bonded by their dev accounts', async () => {
    await waitHeight(net, ALL, 2, NETWORK_UP_MS);
    // The Ethereum JSON-RPC server may come up after the CometBFT one on a loaded machine.
    await waitFor(
      "node0's Ethereum JSON-RPC",
      async () => {
        try {
          return (await provider.getBlockNumber()) >= 2;
        } catch {
          return false;
        }
      },
      60_000,
      net,
    );
    const list: string[] = await pool.validators!();
    assert.equal(list.length, 4);
    const v = await pool.validator!(list[0]);
    assert.equal(v.bonded, parseEther('10'));
    assert.equal(v.votingPower, 10n);
    assert.equal(await provider.getBalance(POOL), parseEther('40'));
  });

  it('a bonded full node enters the set two heights later, pushes out the weakest and signs', async () => {
    const pub = `0x${Buffer.from(key4.pub, 'base64').toString('hex')}`;
    const tx = await pool.createValidator!(pub, 'node4', 0, { value: parseEther('11'), gasLimit: 300_000n });
    const receipt = await tx.wait(1, 60_000);
    assert.equal(receipt.status, 1);
    const h = receipt.blockNumber as number;
    // CometBFT: updates from FinalizeBlock of H apply to H + 2.
    await waitHeight(net, [0], h + 2, 60_000);
    const atH1 = await validatorsAt(net, h + 1);
    assert.equal(atH1.has(key4.pub), false, `not yet at ${h + 1}`);
    const atH2 = await validatorsAt(net, h + 2);
    assert.equal(atH2.get(key4.pub), 11n, `in the set at ${h + 2}`);
    assert.equal(atH2.size, 4, 'max_validators 4');
    // The headers carry the change: next_validators_hash at H + 1 is validators_hash at H + 2.
    const header = async (x: number) =>
      (await rpc(net.nodes[0]!.cometUrl, `/header?height=${x}`)).header as Record<string, string>;
    const [h1, h2] = [await header(h + 1), await header(h + 2)];
    assert.notEqual(h1.validators_hash, h2.validators_hash);
    assert.equal(h1.next_validators_hash, h2.validators_hash);
    const dropped = genesisKeys.filter((k) => !atH2.has(k));
    assert.equal(dropped.length, 1, 'one genesis validator is out');
    assert.equal((await pool.validator!(operator.address)).votingPower, 11n);

    // The Cosmos SDK REST shapes (:1317) over the pool.
    const mine = await restValidator(net, key4.pub, h + 2);
    assert.ok(mine, 'node4 in /cosmos/staking/v1beta1/validators');
    assert.equal(mine.operator_address.toLowerCase(), operator.address.toLowerCase());
    assert.equal(mine.consensus_pubkey['@type'], '/cosmos.crypto.ed25519.PubKey');
    assert.equal(mine.status, 'BOND_STATUS_BONDED');
    assert.equal(mine.tokens, parseEther('11').toString());
    assert.equal(mine.description.moniker, 'node4');
    assert.equal(mine.commission.commission_rates.rate, '0.000000000000000000');
    // Out of the set at the end of h: unbonding until h's time + unbonding_time (14 days).
    const dropRest = await restValidator(net, dropped[0]!, h + 2);
    assert.equal(dropRest?.status, 'BOND_STATUS_UNBONDING');
    const hTime = BigInt((await provider.getBlock(h))!.timestamp);
    assert.equal(
      dropRest?.unbonding_time,
      new Date(Number(hTime + 1_209_600n) * 1000).toISOString().replace('.000Z', 'Z'),
    );
    const dels = (await rest(net, `/cosmos/staking/v1beta1/delegations/${operator.address}`))
      .delegation_responses as Array<{ balance: { denom: string; amount: string } }>;
    assert.deepEqual(
      dels.map((d) => d.balance),
      [{ denom: 'abtc', amount: parseEther('11').toString() }],
    );
    const params = (await rest(net, '/cosmos/staking/v1beta1/params')).params as Record<string, unknown>;
    assert.equal(params.max_validators, 4);
    assert.equal(params.unbonding_time, '1209600s');
    assert.equal(params.bond_denom, 'abtc');

    // It signs: its precommits are in the commits of the blocks after it entered.
    await waitFor(
      'node4 to sign a block',
      async () => {
        const top = await heightOf(net.nodes[0]!);
        for (let x = h + 2; x < top; x++) if ((await signersOf(net, x)).includes(key4.address)) return true;
        return false;
      },
      60_000,
      net,
    );
    const [before] = await Promise.all([heightOf(net.nodes[0]!)]);
    await waitHeight(net, ALL, before + 2, 60_000);
  });

  it('undelegating below the last active power drops it and the weakest comes back', async () => {
    const tx = await pool.undelegate!(operator.address, parseEther('2'), { gasLimit: 300_000n });
    const receipt = await tx.wait(1, 60_000);
    assert.equal(receipt.status, 1);
    const h = receipt.blockNumber as number;
    await waitHeight(net, [0], h + 2, 60_000);
    const atH2 = await validatorsAt(net, h + 2);
    assert.equal(atH2.has(key4.pub), false, `node4 out at ${h + 2}`);
    assert.deepEqual([...atH2.keys()].sort(), [...genesisKeys].sort());
    assert.equal((await pool.validator!(operator.address)).votingPower, 0n);
    const mine = await restValidator(net, key4.pub, h + 2);
    assert.equal(mine?.status, 'BOND_STATUS_UNBONDING', 'unbonding for unbonding_time after leaving the set');
    assert.equal(mine?.tokens, parseEther('9').toString());
    // The pool holds 40 (genesis) + 11 BTC: 40 bonded in the active set, 9 bonded to node4 and 2 unbonding.
    const poolJson = (await rest(net, '/cosmos/staking/v1beta1/pool')).pool as Record<string, string>;
    assert.deepEqual(poolJson, {
      not_bonded_tokens: parseEther('11').toString(),
      bonded_tokens: parseEther('40').toString(),
    });
    // The chain goes on with the genesis set, every node following.
    const now = await heightOf(net.nodes[0]!);
    await waitHeight(net, ALL, now + 3, 60_000);
  });
});
