// genesis.json as CometBFT writes it (seed §2.2), with this chain's app_state.
// All 64-bit integers are decimal strings, exactly as the seed shows.

export interface GenesisValidatorJson {
  address: string; // upper-case hex
  pub_key: { type: 'tendermint/PubKeyEd25519'; value: string }; // base64
  power: string; // decimal
  name: string;
}

export interface GenesisAccountJson {
  address: string; // 0x-prefixed 20-byte hex
  balance: string; // decimal, base units (1 BTC = 10^18)
  nonce?: string;
  code?: string; // 0x hex
  storage?: Record<string, string>;
}

export interface AppStateJson {
  evm: {
    /** EVM chain id as a decimal string (31612 mainnet, 31611 testnet, 31337 local). */
    chain_id: string;
    accounts: GenesisAccountJson[];
  };
}

export interface GenesisJson {
  genesis_time: string; // ISO 8601 UTC
  chain_id: string;
  initial_height: string;
  consensus_params: {
    block: { max_bytes: string; max_gas: string };
    evidence: { max_age_num_blocks: string; max_age_duration: string; max_bytes: string };
    validator: { pub_key_types: string[] };
    version: { app: string };
    abci: { vote_extensions_enable_height: string };
  };
  validators: GenesisValidatorJson[];
  app_hash: string;
  app_state: AppStateJson;
}
