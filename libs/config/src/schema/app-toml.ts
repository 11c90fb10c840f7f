// app.toml: application settings (seed §2.3, §2.4): the REST API, the EVM and its JSON-RPC, pruning.
// Key names follow Cosmos SDK / Ethermint habits; values are the seed's, else geth's defaults.
import type { GasOptions } from '@noded/execution';
import type { EthRpcOptions } from '@noded/rpc';
import { NODE_MODES, type NodeMode } from '../constants.js';
import {
  type ListenAddress,
  nodeHttpUrl,
  parseBtcAmount,
  parseDecimalString,
  parseDuration,
  parseListenAddress,
  splitList,
} from '../values.js';
import {
  IsBigInt,
  IsBool,
  IsBtcAmount,
  IsDecimalString,
  IsDuration,
  IsInt,
  IsListenAddress,
  IsNameList,
  IsOneOf,
  IsText,
  IsTextList,
} from './rules.js';
import { TomlSection } from './section.js';

/** Namespaces the Ethereum JSON-RPC can serve. */
export const EVM_RPC_APIS = ['eth', 'net', 'web3', 'txpool', 'debug'] as const;

/** Seed §2.4 [api]. */
export class ApiSection extends TomlSection {
  @IsBool() enable = true;
  @IsBool() swagger = false;
  @IsListenAddress() address = 'tcp://0.0.0.0:1317';
  @IsInt(0) max_open_connections = 1000;
  @IsDuration() rpc_read_timeout = '10s';
  @IsDuration() rpc_write_timeout = '10s';
  @IsInt(1) rpc_max_body_bytes = 1000000;
  @IsText() tls_cert_file = '';
  @IsText() tls_key_file = '';
}

/** Seed §2.4 [evm.gas] plus the fee-market targets a real chain needs. */
export class EvmGasSection extends TomlSection {
  @IsDecimalString() base_fee = '1000000000';
  @IsDecimalString() min_gas_price = '1000000000';
  @IsDecimalString() max_gas_price = '1000000000000';
  @IsDecimalString(1n) gas_target = '15000000';
  @IsDecimalString(21000n) block_gas_limit = '30000000';
}

export class EvmRpcSection extends TomlSection {
  @IsBool() enable = true;
  @IsBool() ws_enable = true;
  @IsNameList(EVM_RPC_APIS) apis = 'eth,net,web3,txpool,debug';
  @IsBigInt(0n) gas_cap = 50000000;
  @IsDuration() evm_timeout = '5s';
  @IsBtcAmount() txfee_cap = '1';
  @IsInt(0) logs_cap = 10000;
  @IsInt(0) block_range_cap = 10000;
  @IsInt(0) batch_request_limit = 1000;
  @IsInt(0) batch_response_max_size = 25000000;
  @IsInt(1) max_body_bytes = 5242880;
  @IsInt(0) filter_cap = 200;
  @IsDuration(1) filter_timeout = '5m';
  @IsInt(0) max_subscriptions_per_connection = 100;
  @IsDuration() ws_ping_interval = '30s';
  @IsInt(1024) ws_max_buffered_bytes = 16777216;
  @IsDuration() http_timeout = '30s';
  @IsTextList() cors_allowed_origins: string[] = ['*'];
  @IsBool() allow_unprotected_txs = false;
  @IsInt(1) feehistory_cap = 1024;
}

/** Seed §2.4 [evm]. */
export class EvmSection extends TomlSection {
  @IsListenAddress() rpc_address = '0.0.0.0:8545';
  @IsListenAddress() ws_address = '0.0.0.0:8546';
  @IsListenAddress() api_address = '0.0.0.0:1317';
  @IsDecimalString() max_gas_price = '1000000000000';
  @IsDecimalString() min_gas_price = '1000000000';
  gas = new EvmGasSection();
  rpc = new EvmRpcSection();
}

/** [light]: the light client of `mode = "light"` (docs/light-client.md); unused by full nodes. */
export class LightSection extends TomlSection {
  @IsDuration(1) trusting_period = '168h';
  @IsDuration() max_clock_drift = '10s';
  @IsInt(0) trust_height = 0;
  @IsText({ pattern: /^([0-9a-fA-F]{64})?$/, patternText: '64 hex characters (a header hash) or ""' })
  trust_hash = '';
  @IsText() rpc_servers = '';
}

/**
 * [bridge]: reading bridge-in deposits from the source chain (docs/bridge.md). With `enable = true`
 * the node runs the deposit watcher and its vote extensions attest what it reads.
 */
export class BridgeSection extends TomlSection {
  @IsBool() enable = false;
  @IsText({ pattern: /^(https?:\/\/\S+)?$/, patternText: 'an http:// or https:// URL, or ""' })
  ethereum_rpc_url = '';
  @IsText({ pattern: /^(0x[0-9a-fA-F]{40})?$/, patternText: '0x followed by 40 hex digits, or ""' })
  bridge_address = '';
  @IsText({ pattern: /^(0x[0-9a-fA-F]{40})?$/, patternText: '0x followed by 40 hex digits, or ""' })
  btc_token_address = '';
  @IsInt(0, 10_000) confirmations = 12;
  @IsDuration(100) poll_interval = '5s';
  @IsInt(0) start_block = 0;
}

export class AppTomlFile extends TomlSection {
  @IsOneOf(NODE_MODES) mode = 'full';
  @IsOneOf(['default', 'nothing']) pruning = 'default';
  @IsDecimalString(1n) pruning_keep_recent = '362880';
  api = new ApiSection();
  evm = new EvmSection();
  light = new LightSection();
  bridge = new BridgeSection();
}

export const APP_TOML_DOCS: Record<string, string> = {
  mode:
    'Node type recorded by `noded init <node_type>`: "full", "archive" or "light".\n' +
    '`noded start --mode` overrides it for one run between "full" and "archive"; a light home stays light.',
  pruning:
    '"default": keep the state of the last pruning_keep_recent heights (full node);\n' +
    '"nothing": keep all historical state (archive node).',
  pruning_keep_recent: 'Heights of state kept when pruning = "default" (a decimal integer string).',
  api: 'REST API (seed §2.4 [api], §4.4, port 1317).',
  'api.enable': 'Serve the REST API.',
  'api.swagger': 'Serve the Swagger (OpenAPI) page of the REST API at /swagger/.',
  'api.address': 'TCP address the REST API listens on.',
  'api.max_open_connections': 'Maximum simultaneous connections to the REST API (0 = unlimited).',
  'api.rpc_read_timeout': 'Time allowed to read a whole request.',
  'api.rpc_write_timeout': 'Time allowed to write a whole response.',
  'api.rpc_max_body_bytes': 'Maximum size of a request body in bytes.',
  'api.tls_cert_file':
    'PEM certificate file; with tls_key_file, the REST API is served over TLS (seed §5).\n' +
    'Both set or both empty. Relative paths are relative to <home>/config.',
  'api.tls_key_file': 'PEM private key file matching tls_cert_file.',
  evm: 'EVM and its Ethereum-compatible JSON-RPC (seed §2.4 [evm], §4.3).',
  'evm.rpc_address': 'Address of the Ethereum JSON-RPC over HTTP.',
  'evm.ws_address': 'Address of the Ethereum JSON-RPC over WebSocket.',
  'evm.api_address': 'Address of the REST API as the EVM tooling sees it; must match [api] address.',
  'evm.max_gas_price':
    'Highest gas price (base units per gas, 1 BTC = 10^18) this node accepts in a transaction.',
  'evm.min_gas_price': 'Lowest gas price this node accepts in a transaction (<= evm.max_gas_price).',
  'evm.gas': 'Fee market (seed §2.4 [evm.gas]): EIP-1559 base fee clamped to [min_gas_price, max_gas_price].',
  'evm.gas.base_fee': 'Base fee of the first block; must lie in [min_gas_price, max_gas_price].',
  'evm.gas.min_gas_price': 'Lowest base fee the fee market may reach.',
  'evm.gas.max_gas_price': 'Highest base fee the fee market may reach.',
  'evm.gas.gas_target': 'Gas used per block at which the base fee stays constant (EIP-1559 target).',
  'evm.gas.block_gas_limit':
    'Gas limit of a block, reported to clients, and the maximum gas of one transaction.',
  'evm.rpc': 'Limits of the Ethereum JSON-RPC (geth defaults).',
  'evm.rpc.enable': 'Serve the JSON-RPC over HTTP (evm.rpc_address).',
  'evm.rpc.ws_enable': 'Serve the JSON-RPC over WebSocket (evm.ws_address).',
  'evm.rpc.apis': `Namespaces served, comma-separated, from: ${EVM_RPC_APIS.join(', ')}.`,
  'evm.rpc.gas_cap': 'Gas cap of eth_call and eth_estimateGas (0 = no cap).',
  'evm.rpc.evm_timeout': 'Time limit of one eth_call or eth_estimateGas ("0s" = none).',
  'evm.rpc.txfee_cap': 'Largest fee (BTC) eth_sendTransaction accepts, e.g. "1" or "0.5" ("0" = no cap).',
  'evm.rpc.logs_cap': 'Maximum logs eth_getLogs returns (0 = unlimited).',
  'evm.rpc.block_range_cap': 'Maximum blocks one eth_getLogs may span (0 = unlimited).',
  'evm.rpc.batch_request_limit': 'Maximum requests in one batch (0 = unlimited).',
  'evm.rpc.batch_response_max_size': 'Maximum bytes of one batch response (0 = unlimited).',
  'evm.rpc.max_body_bytes': 'Maximum size of a request body in bytes.',
  'evm.rpc.filter_cap': 'Maximum installed filters (eth_newFilter & co.) (0 = unlimited).',
  'evm.rpc.filter_timeout': 'A filter not polled for this long is removed.',
  'evm.rpc.max_subscriptions_per_connection': 'Maximum eth_subscribe subscriptions per WebSocket.',
  'evm.rpc.ws_ping_interval': 'Interval of WebSocket pings ("0s" = none).',
  'evm.rpc.ws_max_buffered_bytes':
    'A WebSocket whose unsent data exceeds this many bytes is disconnected (slow subscriber).',
  'evm.rpc.http_timeout': 'Time limit of one HTTP request ("0s" = none).',
  'evm.rpc.cors_allowed_origins': 'Origins allowed from a browser; ["*"] allows any.',
  'evm.rpc.allow_unprotected_txs': 'Accept legacy transactions without EIP-155 replay protection.',
  'evm.rpc.feehistory_cap': 'Maximum block count of one eth_feeHistory.',
  light: 'Light client (mode = "light"): what it trusts and for how long (docs/light-client.md).',
  'light.trusting_period':
    "How long a verified header can vouch for later ones (CometBFT's trusting period);\n" +
    "keep it below the chain's unbonding period.",
  'light.max_clock_drift': "How far ahead of this machine's clock a header's time may be.",
  'light.trust_height':
    'Height of a header trusted by hash (with trust_hash); 0: trust the first block,\n' +
    'checked against the genesis validators.',
  'light.trust_hash': 'Hash (hex) of the header at trust_height; both set or both empty.',
  'light.rpc_servers':
    'CometBFT RPC servers to follow besides the P2P peers, comma-separated\n' +
    '("http://host:26657,https://rpc.example.com"); what they send is verified like a peer\'s.',
  bridge:
    'Bridge in (docs/bridge.md): the source EVM chain whose AssetsLocked events validators attest.\n' +
    'The parameters every node must share are in genesis.json app_state.bridge, not here.',
  'bridge.enable':
    "Watch the source chain for deposits and attest them in this validator's vote extensions\n" +
    '(needs the three keys below, and genesis consensus_params.abci.vote_extensions_enable_height).',
  'bridge.ethereum_rpc_url': "The source chain's JSON-RPC, http:// or https://.",
  'bridge.bridge_address':
    'The source-chain contract that emits AssetsLocked (contracts/BTCBridgeSource.sol).',
  'bridge.btc_token_address': 'The wrapped-BTC ERC-20 on the source chain that maps to native BTC.',
  'bridge.confirmations': 'Blocks a deposit must be buried under on the source chain before it is attested.',
  'bridge.poll_interval': 'How often the source chain is read for new deposits.',
  'bridge.start_block':
    "The first source block read (the bridge contract's deployment block); later starts resume where the last one stopped.",
};

/** app.toml after validation: camelCase, durations in ms, integer strings as bigint. */
export interface AppToml {
  mode: NodeMode;
  pruning: 'default' | 'nothing';
  pruningKeepRecent: bigint;
  api: {
    enable: boolean;
    swagger: boolean;
    address: ListenAddress;
    maxOpenConnections: number;
    rpcReadTimeoutMs: number;
    rpcWriteTimeoutMs: number;
    rpcMaxBodyBytes: number;
    /** Absolute path, or "" when TLS is off. */
    tlsCertFile: string;
    /** Absolute path, or "" when TLS is off. */
    tlsKeyFile: string;
  };
  evm: {
    rpcAddress: ListenAddress;
    wsAddress: ListenAddress;
    apiAddress: ListenAddress;
    maxGasPrice: bigint;
    minGasPrice: bigint;
    /** [evm.gas]: the executor's fee-market options. */
    gas: GasOptions;
    /** [evm.rpc]: the JSON-RPC server's own option record (txFeeCap in base units; 0n = no cap). */
    rpc: Required<EthRpcOptions>;
  };
  light: {
    trustingPeriodMs: number;
    maxClockDriftMs: number;
    /** 0 when the light client roots on the genesis. */
    trustHeight: number;
    /** Upper-case hex, or "" with trustHeight 0. */
    trustHash: string;
    /** http(s) base URLs (tcp:// read as http://), no trailing slash. */
    rpcServers: string[];
  };
  bridge: {
    enable: boolean;
    /** "" when unset. */
    ethereumRpcUrl: string;
    /** Lower-case 0x hex, "" when unset. */
    bridgeAddress: string;
    btcTokenAddress: string;
    confirmations: number;
    pollIntervalMs: number;
    startBlock: number;
  };
}

const ms = (s: string) => parseDuration(s)!;
const int = (s: string) => parseDecimalString(s)!;
const addr = (s: string) => parseListenAddress(s)!;

/** Converts a validated file tree to the typed config; relative TLS paths are resolved by `resolve`. */
export function toAppToml(f: AppTomlFile, resolve: (path: string) => string = (p) => p): AppToml {
  const r = f.evm.rpc;
  return {
    mode: f.mode as NodeMode,
    pruning: f.pruning as 'default' | 'nothing',
    pruningKeepRecent: int(f.pruning_keep_recent),
    api: {
      enable: f.api.enable,
      swagger: f.api.swagger,
      address: addr(f.api.address),
      maxOpenConnections: f.api.max_open_connections,
      rpcReadTimeoutMs: ms(f.api.rpc_read_timeout),
      rpcWriteTimeoutMs: ms(f.api.rpc_write_timeout),
      rpcMaxBodyBytes: f.api.rpc_max_body_bytes,
      tlsCertFile: f.api.tls_cert_file === '' ? '' : resolve(f.api.tls_cert_file),
      tlsKeyFile: f.api.tls_key_file === '' ? '' : resolve(f.api.tls_key_file),
    },
    evm: {
      rpcAddress: addr(f.evm.rpc_address),
      wsAddress: addr(f.evm.ws_address),
      apiAddress: addr(f.evm.api_address),
      maxGasPrice: int(f.evm.max_gas_price),
      minGasPrice: int(f.evm.min_gas_price),
      gas: {
        baseFee: int(f.evm.gas.base_fee),
        minGasPrice: int(f.evm.gas.min_gas_price),
        maxGasPrice: int(f.evm.gas.max_gas_price),
        gasTarget: int(f.evm.gas.gas_target),
        blockGasLimit: int(f.evm.gas.block_gas_limit),
      },
      rpc: {
        enable: r.enable,
        wsEnable: r.ws_enable,
        apis: splitList(r.apis),
        gasCap: BigInt(r.gas_cap),
        evmTimeoutMs: ms(r.evm_timeout),
        txFeeCap: parseBtcAmount(r.txfee_cap)!,
        logsCap: r.logs_cap,
        blockRangeCap: r.block_range_cap,
        batchRequestLimit: r.batch_request_limit,
        batchResponseMaxSize: r.batch_response_max_size,
        maxBodyBytes: r.max_body_bytes,
        filterCap: r.filter_cap,
        filterTimeoutMs: ms(r.filter_timeout),
        maxSubscriptionsPerConnection: r.max_subscriptions_per_connection,
        wsPingIntervalMs: ms(r.ws_ping_interval),
        wsMaxBufferedBytes: r.ws_max_buffered_bytes,
        httpTimeoutMs: ms(r.http_timeout),
        corsAllowedOrigins: [...r.cors_allowed_origins],
        allowUnprotectedTxs: r.allow_unprotected_txs,
        feeHistoryCap: r.feehistory_cap,
      },
    },
    light: {
      trustingPeriodMs: ms(f.light.trusting_period),
      maxClockDriftMs: ms(f.light.max_clock_drift),
      trustHeight: f.light.trust_height,
      trustHash: f.light.trust_hash.toUpperCase(),
      rpcServers: splitList(f.light.rpc_servers).map((u) => nodeHttpUrl(u) ?? u),
    },
    bridge: {
      enable: f.bridge.enable,
      ethereumRpcUrl: f.bridge.ethereum_rpc_url,
      bridgeAddress: f.bridge.bridge_address.toLowerCase(),
      btcTokenAddress: f.bridge.btc_token_address.toLowerCase(),
      confirmations: f.bridge.confirmations,
      pollIntervalMs: ms(f.bridge.poll_interval),
      startBlock: f.bridge.start_block,
    },
  };
}
