// The Cosmos SDK distribution routes (x/distribution v1beta1 gateway shapes) over the fee split
// (docs/staking.md "The fee split"): a delegator's rewards and a validator's commission are the
// validator pool's pendingRewards / pendingCommission views, the params the reward stake's params(),
// all read at the queried height. Amounts are DecCoins of abtc (base units), as the SDK prints
// them: an empty list when there is nothing.
import type { Hex } from '@noded/types';
import type { JsonObject } from '../comet/encode.js';
import { GatewayError, type RestContext, type RestRequest, type RestRoute } from './routes.js';
import { addrArg, addressArray, callPool, dec, operators, selector, word } from './staking.js';

/** The reward stake precompile (its params and the fee split's state). */
export const REWARD_STAKE_ADDRESS = '0x7b7c000000000000000000000000000000000016' as Hex;

const SEL = {
  pendingRewards: selector('pendingRewards(address,address)'),
  pendingCommission: selector('pendingCommission(address)'),
  outstanding: selector('outstandingRewards(address)'),
  delegatorValidators: selector('delegatorValidators(address)'),
  exists: selector('validatorShares(address)'),
  params: selector('params()'),
};
const DEC_ONE = 10n ** 18n;

/** DecCoins of `amount` base units: empty when 0, as the SDK omits zero coins. */
const decCoins = (amount: bigint): JsonObject[] =>
  amount === 0n ? [] : [{ denom: 'abtc', amount: dec(amount * DEC_ONE) }];

async function rewardParams(ctx: RestContext, height: bigint): Promise<[bigint, bigint]> {
  const r = await ctx.chain.call(
    { to: REWARD_STAKE_ADDRESS, data: `0x${SEL.params}` as Hex },
    height,
    undefined,
    { gasCap: 10_000_000n, timeoutMs: 5000 },
  );
  const out = Buffer.from(r.returnData.slice(2), 'hex');
  if (r.reverted || r.error) {
    const reason =
      out.length >= 68 && out.subarray(0, 4).toString('hex') === '08c379a0'
        ? out.subarray(68, 68 + Number(word(out.subarray(4), 1))).toString('utf8')
        : (r.error ?? 'reverted');
    if (reason.startsWith('the reward stake is not enabled')) throw new GatewayError(12, 501, reason);
    throw new GatewayError(13, 500, `reward stake: ${reason}`);
  }
  if (out.length < 64)
    throw new GatewayError(13, 500, `reward stake: answered ${out.length} bytes; 64 were expected`);
  return [word(out, 0), word(out, 1)];
}

async function pending(ctx: RestContext, h: bigint, who: Hex, op: Hex): Promise<bigint> {
  return word(await callPool(ctx, h, SEL.pendingRewards + addrArg(who) + addrArg(op)), 0);
}

/** The distribution routes; `helpers` as for stakingRoutes. */
export function distributionRoutes(helpers: {
  parseAddress: (ctx: RestContext, text: string) => Hex;
  displayAddress: (ctx: RestContext, addr: Hex) => string;
  queryHeight: (ctx: RestContext, req: RestRequest) => bigint;
}): RestRoute[] {
  const { parseAddress, displayAddress, queryHeight } = helpers;
  return [
    {
      path: '/cosmos/distribution/v1beta1/params',
      summary:
        'The fee split (genesis app_state.rewards) in x/distribution shape, with validator_share and block_reward.',
      handler: async (ctx, req) => {
        const [share, reward] = await rewardParams(ctx, queryHeight(ctx, req));
        return {
          params: {
            community_tax: dec(0n),
            base_proposer_reward: dec(0n),
            bonus_proposer_reward: dec(0n),
            withdraw_addr_enabled: false,
            validator_share: dec(share),
            block_reward: reward.toString(),
          },
        };
      },
    },
    {
      path: '/cosmos/distribution/v1beta1/delegators/{delegator_address}/rewards',
      summary:
        "A delegator's unclaimed rewards, per validator it has rewards or shares with, and their total.",
      handler: async (ctx, req) => {
        const who = parseAddress(ctx, req.params.delegator_address);
        const h = queryHeight(ctx, req);
        await rewardParams(ctx, h);
        const rewards: JsonObject[] = [];
        let total = 0n;
        for (const op of await operators(ctx, h)) {
          const v = await pending(ctx, h, who, op);
          if (v === 0n) continue;
          total += v;
          rewards.push({ validator_address: displayAddress(ctx, op), reward: decCoins(v) });
        }
        return { rewards, total: decCoins(total) };
      },
    },
    {
      path: '/cosmos/distribution/v1beta1/delegators/{delegator_address}/rewards/{validator_address}',
      summary: "A delegator's unclaimed rewards from one validator.",
      handler: async (ctx, req) => {
        const who = parseAddress(ctx, req.params.delegator_address);
        const op = parseAddress(ctx, req.params.validator_address);
        const h = queryHeight(ctx, req);
        await rewardParams(ctx, h);
        await callPool(ctx, h, SEL.exists + addrArg(op)); // 404 when it operates no validator
        return { rewards: decCoins(await pending(ctx, h, who, op)) };
      },
    },
    {
      path: '/cosmos/distribution/v1beta1/delegators/{delegator_address}/validators',
      summary:
        'The validators a delegator has shares of or unclaimed rewards from (what claimAllRewards() claims).',
      handler: async (ctx, req) => {
        const who = parseAddress(ctx, req.params.delegator_address);
        const h = queryHeight(ctx, req);
        const out = await callPool(ctx, h, SEL.delegatorValidators + addrArg(who));
        return { validators: addressArray(out, 0).map((op) => displayAddress(ctx, op)) };
      },
    },
    {
      path: '/cosmos/distribution/v1beta1/validators/{validator_address}/outstanding_rewards',
      summary:
        "A validator's rewards not claimed yet by its delegators and operator, its commission included.",
      handler: async (ctx, req) => {
        const op = parseAddress(ctx, req.params.validator_address);
        const h = queryHeight(ctx, req);
        await rewardParams(ctx, h);
        const v = word(await callPool(ctx, h, SEL.outstanding + addrArg(op)), 0);
        return { rewards: { rewards: decCoins(v) } };
      },
    },
    {
      path: '/cosmos/distribution/v1beta1/validators/{validator_address}/commission',
      summary: "A validator's unclaimed commission.",
      handler: async (ctx, req) => {
        const op = parseAddress(ctx, req.params.validator_address);
        const h = queryHeight(ctx, req);
        await rewardParams(ctx, h);
        await callPool(ctx, h, SEL.exists + addrArg(op));
        const v = word(await callPool(ctx, h, SEL.pendingCommission + addrArg(op)), 0);
        return { commission: { commission: decCoins(v) } };
      },
    },
  ];
}
