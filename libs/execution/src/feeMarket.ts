// EIP-1559 base fee, adjusted once per block and clamped to app.toml [evm.gas]
// [min_gas_price, max_gas_price]. The block has no gas cap (consensus_params.block.max_gas = -1),
// so the target is configured directly (gas_target) instead of being half the block limit.

export const ELASTICITY_MULTIPLIER = 2n;
export const BASE_FEE_CHANGE_DENOMINATOR = 8n;

export interface FeeMarketParams {
  minGasPrice: bigint;
  maxGasPrice: bigint;
  gasTarget: bigint;
}

export function clampBaseFee(fee: bigint, p: Pick<FeeMarketParams, 'minGasPrice' | 'maxGasPrice'>): bigint {
  if (fee < p.minGasPrice) return p.minGasPrice;
  if (fee > p.maxGasPrice) return p.maxGasPrice;
  return fee;
}

/**
 * The base fee of the block after one with `parentBaseFee` that used `parentGasUsed`
 * (EIP-1559's formula: +-1/8 of the fee per target's worth of deviation, at least +1 when above
 * target), then clamped.
 */
export function nextBaseFee(parentBaseFee: bigint, parentGasUsed: bigint, p: FeeMarketParams): bigint {
  const target = p.gasTarget;
  let fee: bigint;
  if (target <= 0n || parentGasUsed === target) fee = parentBaseFee;
  else if (parentGasUsed > target) {
    const delta = (parentBaseFee * (parentGasUsed - target)) / target / BASE_FEE_CHANGE_DENOMINATOR;
    fee = parentBaseFee + (delta > 1n ? delta : 1n);
  } else {
    const delta = (parentBaseFee * (target - parentGasUsed)) / target / BASE_FEE_CHANGE_DENOMINATOR;
    fee = parentBaseFee - delta;
  }
  return clampBaseFee(fee, p);
}

/** Tip per gas a transaction pays at `baseFee` (legacy: gasPrice - baseFee). */
export function effectiveTip(maxFeePerGas: bigint, maxPriorityFeePerGas: bigint, baseFee: bigint): bigint {
  const room = maxFeePerGas - baseFee;
  return room < maxPriorityFeePerGas ? room : maxPriorityFeePerGas;
}
