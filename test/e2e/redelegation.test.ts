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

describe('redelegation against noded chain-local', { timeout: 420_000 }, () => {
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

    // The validator-side and delegator-side staking routes at H: the second validator has its own
    // self-bond and the delegator's moved stake, by address as the SDK's store keys order them.
    const at = (path: string) =>
      fetch(`${env.node.apiUrl}${path}`, {
        headers: { 'x-cosmos-block-height': String(h) },
        signal: AbortSignal.timeout(10_000),
      });
    const one = parseEther('1').toString();
    const dr = (who: string, op: string) => ({
      delegation: { delegator_address: who, validator_address: op, shares: `${one}.000000000000000000` },
      balance: { denom: 'abtc', amount: one },
    });
    const byAddress = [second.address, delegator.address].sort((a, b) =>
      a.toLowerCase() < b.toLowerCase() ? -1 : 1,
    );
    const vd = await at(`/cosmos/staking/v1beta1/validators/${second.address}/delegations`);
    assert.equal(vd.status, 200);
    assert.deepEqual(await vd.json(), {
      delegation_responses: byAddress.map((w) => dr(w, second.address)),
      pagination: { next_key: null, total: '2' },
    });
    const page1 = (await (
      await at(`/cosmos/staking/v1beta1/validators/${second.address}/delegations?pagination.limit=1`)
    ).json()) as { delegation_responses: unknown[]; pagination: { next_key: string; total: string } };
    assert.deepEqual(page1.delegation_responses, [dr(byAddress[0]!, second.address)]);
    assert.equal(page1.pagination.total, '2');
    const page2 = (await (
      await at(
        `/cosmos/staking/v1beta1/validators/${second.address}/delegations?pagination.key=${encodeURIComponent(page1.pagination.next_key)}`,
      )
    ).json()) as { delegation_responses: unknown[]; pagination: unknown };
    assert.deepEqual(page2, {
      delegation_responses: [dr(byAddress[1]!, second.address)],
      pagination: { next_key: null, total: '2' },
    });
    const single = await at(
      `/cosmos/staking/v1beta1/validators/${second.address}/delegations/${delegator.address}`,
    );
    assert.equal(single.status, 200);
    assert.deepEqual(await single.json(), { delegation_response: dr(delegator.address, second.address) });
    // Before the delegation (H - 1 has no redelegation yet) the delegator holds none of it: 404.
    const none = await fetch(
      `${env.node.apiUrl}/cosmos/staking/v1beta1/validators/${second.address}/delegations/${delegator.address}`,
      { headers: { 'x-cosmos-block-height': String(h - 1) }, signal: AbortSignal.timeout(10_000) },
    );
    assert.equal(none.status, 404);
    assert.deepEqual(await none.json(), {
      code: 5,
      message: `delegation with delegator ${delegator.address} not found for validator ${second.address}`,
      details: [],
    });
    const dv = await at(`/cosmos/staking/v1beta1/delegators/${delegator.address}/validators`);
    assert.equal(dv.status, 200);
    const dvj = (await dv.json()) as {
      validators: Array<{ operator_address: string; tokens: string; description: { moniker: string } }>;
      pagination: unknown;
    };
    assert.deepEqual(
      dvj.validators.map((v) => [v.operator_address, v.tokens]),
      [
        [op0, ((await pool.validator(op0, { blockTag: h }))[2] as bigint).toString()],
        [second.address, parseEther('2').toString()],
      ],
    );
    assert.deepEqual(dvj.pagination, { next_key: null, total: '2' });
    const dvOne = await at(
      `/cosmos/staking/v1beta1/delegators/${delegator.address}/validators/${second.address}`,
    );
    assert.equal(dvOne.status, 200);
    assert.deepEqual(((await dvOne.json()) as { validator: unknown }).validator, dvj.validators[1]);
    // Bad input: an address that is none (400, code 3), a validator nobody operates (404, code 5),
    // a delegator with no shares of it (404), and historical info, which the node does not keep.
    const nobody = '0x00000000000000000000000000000000000000aa';
    const bad = await at('/cosmos/staking/v1beta1/validators/0x1234/delegations');
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { code: number }).code, 3);
    const unknown = await at(`/cosmos/staking/v1beta1/validators/${nobody}/unbonding_delegations`);
    assert.equal(unknown.status, 404);
    assert.deepEqual(await unknown.json(), {
      code: 5,
      message: `no validator is operated by ${nobody}`,
      details: [],
    });
    const noShares = await at(
      `/cosmos/staking/v1beta1/delegators/${DEV_ADDRESSES[2]}/validators/${second.address}`,
    );
    assert.equal(noShares.status, 404);
    const hist = await at(`/cosmos/staking/v1beta1/historical_info/${h}`);
    assert.equal(hist.status, 404);
    assert.match(((await hist.json()) as { message: string }).message, /historical_entries is 0/);
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

    // The validator's side: its one unbonding delegation, the same entry.
    const vu = await fetch(
      `${env.node.apiUrl}/cosmos/staking/v1beta1/validators/${operator.address}/unbonding_delegations`,
      { headers: { 'x-cosmos-block-height': String(uh) }, signal: AbortSignal.timeout(10_000) },
    );
    assert.equal(vu.status, 200);
    assert.deepEqual(await vu.json(), {
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
      [
        validator.operator_address,
        validator.status,
        validator.unbonding_height,
        validator.unbonding_time,
        validator.tokens,
      ],
      [
        operator.address,
        'BOND_STATUS_UNBONDING',
        String(left!.blockNumber),
        iso(unbondingEnd),
        parseEther('0.5').toString(),
      ],
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
