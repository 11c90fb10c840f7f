// Redelegation through a real chain-local node with ethers v6, as a wallet would use it: a second
// validator is created, a delegator moves part of its stake from the node's validator to it in one
// transaction (no unbonding), the event, the views and the powers at H + 2 agree, a transitive
// redelegation is refused with its reason, and REST /cosmos/staking/v1beta1/delegators/{d}/redelegations
// answers in the Cosmos SDK's shape; a move away from a validator that left the set matures with that
// validator's unbonding, and REST .../unbonding_delegations shows an undelegation's entry.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { ed25519 } from '@noble/curves/ed25519.js';
import { Contract, getAddress, parseEther, Wallet } from 'ethers';
import { POOL_FRAGMENTS as ABI, POOL } from '../staking-abi.js';
import { DEV_ADDRESSES, DEV_KEYS } from './harness.js';
import { revertReason, useWalletNode } from './wallet.js';

describe('redelegation against noded chain-local', { timeout: 240_000 }, () => {
  const chain = useWalletNode();

  it('moves stake between validators in one transaction; a transitive move is refused; REST shows the entry', async () => {
    const { env, provider } = chain;
    const op0 = getAddress(DEV_ADDRESSES[0]);
    const second = new Wallet(DEV_KEYS[3], provider);
    const delegator = new Wallet(DEV_KEYS[1], provider);
    const pool = new Contract(POOL, ABI, delegator);
    // Power 1 against the node's 10: the chain keeps committing without the second validator.
    const pub = `0x${Buffer.from(ed25519.getPublicKey(randomBytes(32))).toString('hex')}`;
    await (
      await new Contract(POOL, ABI, second).createValidator(pub, 'second', 0, { value: parseEther('1') })
    ).wait();
    await (await pool.delegate(op0, { value: parseEther('2') })).wait();
    const poolBalance = await provider.getBalance(POOL);

    const rc = await (await pool.redelegate(op0, second.address, parseEther('1'))).wait();
    assert.equal(rc!.status, 1);
    const h = rc!.blockNumber;
    const t = BigInt((await provider.getBlock(h))!.timestamp);
    const unbondingTime = (await pool.params())[1] as bigint;
    const ev = pool.interface.parseLog(rc!.logs[0]!)!;
    assert.deepEqual(
      [ev.name, ...ev.args.toArray()],
      ['Redelegated', delegator.address, op0, second.address, parseEther('1'), t + unbondingTime],
    );
    assert.equal(await pool.delegation(delegator.address, op0), parseEther('1'));
    assert.equal(await pool.delegation(delegator.address, second.address), parseEther('1'));
    assert.equal(await provider.getBalance(POOL, h), poolBalance, 'no BTC left the pool');
    const entries = await pool.redelegations(delegator.address);
    assert.deepEqual(
      entries.toArray().map((c: { toArray(): unknown[] }) => c.toArray()),
      [[op0], [second.address], [parseEther('1')], [parseEther('1')], [t + unbondingTime], [BigInt(h)]],
    );

    // No transitive redelegation while the entry to the second validator matures.
    assert.equal(
      await revertReason(pool.redelegate.staticCall(second.address, op0, 1n)),
      `${delegator.address.toLowerCase()} has a redelegation to ${second.address.toLowerCase()} maturing at ${t + unbondingTime} (block time ${BigInt((await provider.getBlock('latest'))!.timestamp)}); no redelegation from ${second.address.toLowerCase()} before then`,
    );

    // The powers follow at H + 2 on the pool's view (the power handed to consensus at the end of H).
    assert.equal((await pool.validator(second.address, { blockTag: h }))[3], 2n);
    assert.equal((await pool.validator(op0, { blockTag: h }))[3], 11n);

    const r = await fetch(
      `${env.node.apiUrl}/cosmos/staking/v1beta1/delegators/${delegator.address}/redelegations`,
      {
        headers: { 'x-cosmos-block-height': String(h) },
        signal: AbortSignal.timeout(10_000),
      },
    );
    assert.equal(r.status, 200);
    const entry = {
      creation_height: String(h),
      completion_time: new Date(Number(t + unbondingTime) * 1000).toISOString().replace('.000Z', 'Z'),
      initial_balance: parseEther('1').toString(),
      shares_dst: `${parseEther('1')}.000000000000000000`,
      unbonding_id: '0',
      unbonding_on_hold_ref_count: '0',
    };
    assert.deepEqual(await r.json(), {
      redelegation_responses: [
        {
          redelegation: {
            delegator_address: delegator.address,
            validator_src_address: op0,
            validator_dst_address: second.address,
            entries: [entry],
          },
          entries: [{ redelegation_entry: entry, balance: parseEther('1').toString() }],
        },
      ],
      pagination: { next_key: null, total: '1' },
    });
  });

  it('from a validator that left the set the move matures with its unbonding; REST shows unbonding entries', async () => {
    const { env, provider } = chain;
    const op0 = getAddress(DEV_ADDRESSES[0]);
    const delegator = new Wallet(DEV_KEYS[2], provider);
    const operator = new Wallet(`0x${randomBytes(32).toString('hex')}`, provider);
    await (await delegator.sendTransaction({ to: operator.address, value: parseEther('2') })).wait();
    const pool = new Contract(POOL, ABI, delegator);
    const pub = `0x${Buffer.from(ed25519.getPublicKey(randomBytes(32))).toString('hex')}`;
    // Power 2 at most beside the node's 11 and the second validator's 2: the node keeps > 2/3.
    await (
      await new Contract(POOL, ABI, operator).createValidator(pub, 'third', 0, { value: parseEther('1') })
    ).wait();
    await (await pool.delegate(operator.address, { value: parseEther('1') })).wait();
    const urc = await (await pool.undelegate(operator.address, parseEther('0.5'))).wait();
    const uh = urc!.blockNumber;
    const ut = BigInt((await provider.getBlock(uh))!.timestamp);
    const unbondingTime = (await pool.params())[1] as bigint;
    const iso = (s: bigint) => new Date(Number(s) * 1000).toISOString().replace('.000Z', 'Z');
    const r = await fetch(
      `${env.node.apiUrl}/cosmos/staking/v1beta1/delegators/${delegator.address}/unbonding_delegations`,
      { headers: { 'x-cosmos-block-height': String(uh) }, signal: AbortSignal.timeout(10_000) },
    );
    assert.equal(r.status, 200);
    const half = parseEther('0.5').toString();
    assert.deepEqual(await r.json(), {
      unbonding_responses: [
        {
          delegator_address: delegator.address,
          validator_address: operator.address,
          entries: [
            {
              creation_height: String(uh),
              completion_time: iso(ut + unbondingTime),
              initial_balance: half,
              balance: half,
              unbonding_id: '0',
              unbonding_on_hold_ref_count: '0',
            },
          ],
        },
      ],
      pagination: { next_key: null, total: '1' },
    });

    // The operator takes its whole self-bond out: the validator leaves the set at the end of that
    // block, and unbonds until its time + unbonding_time.
    const left = await (
      await new Contract(POOL, ABI, operator).undelegate(operator.address, parseEther('1'))
    ).wait();
    assert.equal((await pool.validator(operator.address, { blockTag: left!.blockNumber }))[3], 0n);
    const unbondingEnd = BigInt((await provider.getBlock(left!.blockNumber))!.timestamp) + unbondingTime;
    const rest = (path: string) =>
      fetch(`${env.node.apiUrl}${path}`, {
        headers: { 'x-cosmos-block-height': String(left!.blockNumber) },
        signal: AbortSignal.timeout(10_000),
      });
    const vr = await rest(`/cosmos/staking/v1beta1/validators/${operator.address}`);
    assert.equal(vr.status, 200);
    const { validator } = (await vr.json()) as { validator: Record<string, unknown> };
    assert.deepEqual(
      [validator.operator_address, validator.status, validator.unbonding_time, validator.tokens],
      [operator.address, 'BOND_STATUS_UNBONDING', iso(unbondingEnd), parseEther('0.5').toString()],
    );
    const unbondingList = await rest('/cosmos/staking/v1beta1/validators?status=BOND_STATUS_UNBONDING');
    assert.deepEqual(
      ((await unbondingList.json()) as { validators: Array<{ operator_address: string }> }).validators.map(
        (v) => v.operator_address,
      ),
      [operator.address],
    );
    assert.equal((await rest(`/cosmos/staking/v1beta1/validators/${delegator.address}`)).status, 404);
    const rc = await (await pool.redelegate(operator.address, op0, parseEther('0.5'))).wait();
    const ev = pool.interface.parseLog(rc!.logs[0]!)!;
    assert.deepEqual(
      [ev.name, ...ev.args.toArray()],
      ['Redelegated', delegator.address, operator.address, op0, parseEther('0.5'), unbondingEnd],
    );
    const [, , , , completions] = (await pool.redelegations(delegator.address)).toArray();
    assert.deepEqual(completions.toArray(), [unbondingEnd]);
  });
});
