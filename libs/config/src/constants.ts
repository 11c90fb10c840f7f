// Constants from the spec (seed sections in the comments). They live here once; everything else
// imports them.

/** §2.1: the only chain ids a network record or genesis may carry. */
export const CHAIN_IDS = ['chain-mainnet', 'chain-testnet', 'chain-local'] as const;
export type ChainId = (typeof CHAIN_IDS)[number];

/** EVM chain ids (EIP-155) of each network. */
export const EVM_CHAIN_IDS: Readonly<Record<ChainId, number>> = {
  'chain-mainnet': 31612,
  'chain-testnet': 31611,
  'chain-local': 31337,
};

/** §1.6: node types; `init <node_type>` records one, `start --mode` may override it. */
export const NODE_MODES = ['full', 'light', 'archive'] as const;
export type NodeMode = (typeof NODE_MODES)[number];

/** §4.1 ports. */
export const PORTS = {
  p2p: 26656,
  rpc: 26657,
  api: 1317,
  evmHttp: 8545,
  evmWs: 8546,
  metrics: 26660,
} as const;

/** §2.2 / §8: consensus_params of genesis, as the exact strings the seed shows. */
export const SEED_CONSENSUS_PARAMS = {
  blockMaxBytes: '22020096',
  blockMaxGas: '-1',
  evidenceMaxAgeNumBlocks: '100000',
  evidenceMaxAgeDuration: '172800000000000', // 48 h in ns
} as const;

/** CometBFT's hard ceiling on block.max_bytes (types/params.go MaxBlockSizeBytes, 100 MiB). */
export const MAX_BLOCK_SIZE_BYTES = 104857600n;

/** CometBFT's cap on the total voting power of a validator set (int64 max / 8). */
export const MAX_TOTAL_VOTING_POWER = 9223372036854775807n / 8n;

/** §1.7: BTC is the native gas coin, 18 decimals on the EVM side. */
export const BTC_DECIMALS = 18;
export const BASE_UNITS_PER_BTC = 10n ** 18n;

/** The mnemonic Hardhat and anvil use, so tools' default accounts work on chain-local. */
export const DEFAULT_DEV_MNEMONIC = 'test test test test test test test test test test test junk';
export const DEV_ACCOUNT_COUNT = 20;
export const DEV_ACCOUNT_BALANCE_BTC = 10000n;

/** Voting power of the single chain-local validator written by `init`. */
export const LOCAL_VALIDATOR_POWER = 10n;
