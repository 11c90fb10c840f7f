// config.toml: the CometBFT-style node configuration (seed §2.3, §2.4). Key names are CometBFT's so
// operators' habits and tooling carry over; defaults are the seed's, else CometBFT v0.38's.
import { hostname } from 'node:os';
import type { MempoolOptions } from '@noded/execution';
import type { CometRpcOptions } from '@noded/rpc';
import {
  checkPeerList,
  type ListenAddress,
  type PeerAddress,
  parseDuration,
  parseListenAddress,
  splitList,
} from '../values.js';
import {
  IsBool,
  IsDuration,
  IsExternalAddress,
  IsInt,
  IsListenAddress,
  IsNodeIdList,
  IsOneOf,
  IsPeerList,
  IsText,
  IsTextList,
} from './rules.js';
import { TomlSection } from './section.js';

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export class RpcSection extends TomlSection {
  @IsListenAddress() laddr = 'tcp://127.0.0.1:26657';
  @IsTextList() cors_allowed_origins: string[] = [];
  @IsInt(0) max_open_connections = 900;
  @IsInt(0) max_subscription_clients = 100;
  @IsInt(0) max_subscriptions_per_client = 5;
  @IsInt(100) experimental_subscription_buffer_size = 200;
  @IsBool() experimental_close_on_slow_client = false;
  @IsDuration() timeout_broadcast_tx_commit = '10s';
  @IsInt(0) max_request_batch_size = 10;
  @IsInt(1) max_body_bytes = 1000000;
  @IsInt(1) max_header_bytes = 1048576;
  @IsBool() unsafe = false;
}

export class P2pSection extends TomlSection {
  @IsListenAddress() laddr = 'tcp://0.0.0.0:26656';
  @IsExternalAddress() external_address = '';
  @IsPeerList() persistent_peers = '';
  @IsNodeIdList() unconditional_peer_ids = '';
  @IsPeerList() seeds = '';
  @IsInt(0, 10000) max_num_inbound_peers = 40;
  @IsInt(0, 10000) max_num_outbound_peers = 10;
  @IsBool() pex = true;
  @IsBool() seed_mode = false;
  @IsDuration(1) handshake_timeout = '20s';
  @IsDuration(1) dial_timeout = '3s';
  @IsInt(1) send_rate = 5120000;
  @IsInt(1) recv_rate = 5120000;
  @IsInt(1, 1048576) max_packet_msg_payload_size = 1024;
  @IsDuration() flush_throttle_timeout = '100ms';
  @IsBool() allow_duplicate_ip = false;
  @IsBool() addr_book_strict = true;
}

export class MempoolSection extends TomlSection {
  @IsInt(1) size = 5000;
  @IsInt(1) max_txs_bytes = 1073741824;
  @IsInt(1) max_tx_bytes = 1048576;
  @IsInt(0) cache_size = 10000;
  @IsBool() recheck = true;
  @IsInt(1) max_txs_per_sender = 64;
  @IsInt(1, 1000) price_bump = 10;
}

/** Seed §2.4 [consensus]: the seven timeouts, durations as strings. */
export class ConsensusSection extends TomlSection {
  @IsDuration(1) timeout_propose = '3s';
  @IsDuration() timeout_propose_delta = '500ms';
  @IsDuration(1) timeout_prevote = '1s';
  @IsDuration() timeout_prevote_delta = '500ms';
  @IsDuration(1) timeout_precommit = '1s';
  @IsDuration() timeout_precommit_delta = '500ms';
  @IsDuration() timeout_commit = '1s';
  @IsBool() create_empty_blocks = true;
  @IsDuration() create_empty_blocks_interval = '0s';
  @IsBool() skip_timeout_commit = false;
  @IsInt(0) double_sign_check_height = 0;
}

export class TxIndexSection extends TomlSection {
  @IsOneOf(['kv', 'null']) indexer = 'kv';
}

export class InstrumentationSection extends TomlSection {
  @IsBool() prometheus = true;
  @IsListenAddress() prometheus_listen_addr = ':26660';
  @IsInt(0) max_open_connections = 3;
  @IsText({
    pattern: /^[A-Za-z_][A-Za-z0-9_]*$/,
    patternText: 'a Prometheus metric name prefix ([A-Za-z_][A-Za-z0-9_]*)',
  })
  namespace = 'cometbft';
}

/** The file as written: snake_case keys, durations and addresses as strings. */
export class ConfigTomlFile extends TomlSection {
  @IsText({
    nonEmpty: true,
    pattern: /^\P{Cc}{1,70}$/u,
    patternText: '1 to 70 printable characters',
  })
  moniker = hostname() || 'noded';
  @IsOneOf(LOG_LEVELS) log_level = 'info';
  @IsOneOf(['plain', 'json']) log_format = 'plain';
  rpc = new RpcSection();
  p2p = new P2pSection();
  mempool = new MempoolSection();
  consensus = new ConsensusSection();
  tx_index = new TxIndexSection();
  instrumentation = new InstrumentationSection();
}

/** Comments written above each key by `init`; docs/configuration.md says the same at length. */
export const CONFIG_TOML_DOCS: Record<string, string> = {
  moniker: 'A name for this node, shown to peers and in /status.',
  log_level: 'Log level: trace, debug, info, warn or error (`noded start --log-level` overrides it).',
  log_format:
    'Console log format: "plain" (readable lines on a terminal, JSON lines otherwise) or "json"; `noded start --log-format` overrides it. The log file is always JSON lines.',
  rpc: 'CometBFT-compatible RPC (seed §4.2): HTTP, with the WebSocket at /websocket on the same port.',
  'rpc.laddr': 'TCP address the RPC listens on. Restrict access with a firewall (seed §5).',
  'rpc.cors_allowed_origins': 'Origins allowed to call the RPC from a browser; ["*"] allows any, [] none.',
  'rpc.max_open_connections': 'Maximum simultaneous HTTP and WebSocket connections (0 = unlimited).',
  'rpc.max_subscription_clients': 'Maximum WebSocket clients with at least one subscription.',
  'rpc.max_subscriptions_per_client': 'Maximum subscriptions (queries) per WebSocket client.',
  'rpc.experimental_subscription_buffer_size':
    'Events buffered per subscription before it counts as slow (>= 100).',
  'rpc.experimental_close_on_slow_client':
    'true: close a slow subscriber with an error; false: drop its events instead.',
  'rpc.timeout_broadcast_tx_commit':
    'How long broadcast_tx_commit waits for the transaction to be committed.',
  'rpc.max_request_batch_size': 'Maximum requests in one JSON-RPC batch (0 = unlimited).',
  'rpc.max_body_bytes': 'Maximum size of a request body in bytes.',
  'rpc.max_header_bytes': 'Maximum size of request headers in bytes.',
  'rpc.unsafe': 'Enable the unsafe RPC methods (dial_seeds, dial_peers, unsafe_flush_mempool).',
  p2p: 'Peer-to-peer networking (seed §2.4 [p2p]).',
  'p2p.laddr': 'TCP address to listen on for peers.',
  'p2p.external_address': 'Address peers should dial, "<external_ip>:26656"; empty: advertise laddr.',
  'p2p.persistent_peers': 'Peers to stay connected to: comma-separated "<node_id>@<host>:26656".',
  'p2p.unconditional_peer_ids': 'Node ids always accepted, even above the peer limits (comma-separated).',
  'p2p.seeds': 'Seed nodes to learn peers from: comma-separated "<node_id>@<host>:26656".',
  'p2p.max_num_inbound_peers': 'Maximum inbound peers.',
  'p2p.max_num_outbound_peers': 'Maximum outbound peers.',
  'p2p.pex': 'Peer exchange: learn peers from seeds and peers, and share known peers with them.',
  'p2p.seed_mode':
    "Seed mode: answer peers' requests for addresses, then hang up on them (needs pex = true).",
  'p2p.handshake_timeout': 'Time limit of the connection handshake with a peer (encryption and node info).',
  'p2p.dial_timeout': 'Time limit of dialing a peer: TCP connect and the noise/yamux upgrade.',
  'p2p.send_rate': 'Maximum bytes per second sent to each peer.',
  'p2p.recv_rate': 'Maximum bytes per second received from each peer.',
  'p2p.max_packet_msg_payload_size': 'Maximum payload bytes of one packet; longer messages are split.',
  'p2p.flush_throttle_timeout': 'How long buffered messages to a peer may wait before they are flushed.',
  'p2p.allow_duplicate_ip':
    'Accept several peers from one IP address (`noded testnet` sets true: its nodes share a machine).',
  'p2p.addr_book_strict':
    'Refuse non-routable (private, loopback) peer addresses; false for private networks (`noded testnet`).',
  mempool: 'Pending transactions waiting for a block.',
  'mempool.size': 'Maximum number of transactions in the mempool.',
  'mempool.max_txs_bytes': 'Maximum total bytes of the transactions in the mempool.',
  'mempool.max_tx_bytes': 'Maximum size of one transaction in bytes (<= max_txs_bytes).',
  'mempool.cache_size': 'Size of the cache of recently seen transaction hashes (0 disables it).',
  'mempool.recheck': 'Re-check pending transactions against the new state after each block.',
  'mempool.max_txs_per_sender':
    'Transactions each sender is guaranteed in the pool; more while the pool has room. Also how far past its executable run queued nonces may go.',
  'mempool.price_bump': 'Percent a replacement (same sender and nonce) must raise the gas price by.',
  consensus: 'BFT consensus round timeouts (seed §2.4 [consensus]); durations as strings.',
  'consensus.timeout_propose': 'How long to wait for a proposal before prevoting nil.',
  'consensus.timeout_propose_delta': 'Added to timeout_propose in each later round.',
  'consensus.timeout_prevote': 'How long to wait after +2/3 prevotes for anything.',
  'consensus.timeout_prevote_delta': 'Added to timeout_prevote in each later round.',
  'consensus.timeout_precommit': 'How long to wait after +2/3 precommits for anything.',
  'consensus.timeout_precommit_delta': 'Added to timeout_precommit in each later round.',
  'consensus.timeout_commit': 'How long to wait after committing a block before starting the next height.',
  'consensus.create_empty_blocks':
    'false: wait for transactions before proposing a block (create_empty_blocks_interval = "0s").',
  'consensus.create_empty_blocks_interval':
    'Above "0s": a transaction starts a block at once, and an empty block follows this long after the last one (chain-local: "1s").',
  'consensus.skip_timeout_commit':
    'true: once every precommit of the last block is in, start the next height without waiting timeout_commit (chain-local: true).',
  'consensus.double_sign_check_height':
    "Heights to look back for this validator's own signatures before signing (0 disables the check).",
  tx_index: "Transaction and block indexing for the RPC's tx_search and block_search.",
  'tx_index.indexer': '"kv" indexes transactions and blocks; "null" turns indexing off.',
  instrumentation: 'Prometheus metrics (seed §4.5), GET /metrics.',
  'instrumentation.prometheus': 'Serve Prometheus metrics.',
  'instrumentation.prometheus_listen_addr': 'Address of the metrics server (":26660" = all interfaces).',
  'instrumentation.max_open_connections':
    'Maximum simultaneous connections to the metrics server (0 = unlimited).',
  'instrumentation.namespace': 'Prefix of every metric name (<namespace>_consensus_height, ...).',
};

/** config.toml after validation, camelCase, durations in ms, addresses parsed. */
export interface ConfigToml {
  moniker: string;
  logLevel: LogLevel;
  logFormat: 'plain' | 'json';
  /** [rpc]: the CometBFT RPC server's own option record, with the listen address parsed. */
  rpc: Omit<CometRpcOptions, 'laddr' | 'writeTimeoutMs'> & { laddr: ListenAddress };
  p2p: {
    laddr: ListenAddress;
    /** "" when not set. */
    externalAddress: string;
    persistentPeers: PeerAddress[];
    unconditionalPeerIds: string[];
    seeds: PeerAddress[];
    maxNumInboundPeers: number;
    maxNumOutboundPeers: number;
    pex: boolean;
    seedMode: boolean;
    handshakeTimeoutMs: number;
    dialTimeoutMs: number;
    /** Bytes per second, per peer. */
    sendRate: number;
    /** Bytes per second, per peer. */
    recvRate: number;
    maxPacketMsgPayloadSize: number;
    flushThrottleTimeoutMs: number;
    allowDuplicateIp: boolean;
    addrBookStrict: boolean;
  };
  /** [mempool]: the executor's mempool options, plus CometBFT's cache_size. */
  mempool: MempoolOptions & { cacheSize: number };
  consensus: {
    timeoutProposeMs: number;
    timeoutProposeDeltaMs: number;
    timeoutPrevoteMs: number;
    timeoutPrevoteDeltaMs: number;
    timeoutPrecommitMs: number;
    timeoutPrecommitDeltaMs: number;
    timeoutCommitMs: number;
    createEmptyBlocks: boolean;
    createEmptyBlocksIntervalMs: number;
    skipTimeoutCommit: boolean;
    doubleSignCheckHeight: number;
  };
  txIndex: { indexer: 'kv' | 'null' };
  instrumentation: {
    prometheus: boolean;
    prometheusListenAddr: ListenAddress;
    maxOpenConnections: number;
    namespace: string;
  };
}

const ms = (s: string) => parseDuration(s)!;
const checkAddress = (s: string) => parseListenAddress(s)!;
const peers = (s: string) => checkPeerList(s) as PeerAddress[];

/** Converts a validated file tree (every value well-formed) to the typed config. */
export function toConfigToml(f: ConfigTomlFile): ConfigToml {
  const c = f.consensus;
  return {
    moniker: f.moniker,
    logLevel: f.log_level as LogLevel,
    logFormat: f.log_format as 'plain' | 'json',
    rpc: {
      laddr: checkAddress(f.rpc.laddr),
      corsAllowedOrigins: [...f.rpc.cors_allowed_origins],
      maxOpenConnections: f.rpc.max_open_connections,
      maxSubscriptionClients: f.rpc.max_subscription_clients,
      maxSubscriptionsPerClient: f.rpc.max_subscriptions_per_client,
      experimentalSubscriptionBufferSize: f.rpc.experimental_subscription_buffer_size,
      experimentalCloseOnSlowClient: f.rpc.experimental_close_on_slow_client,
      timeoutBroadcastTxCommitMs: ms(f.rpc.timeout_broadcast_tx_commit),
      maxRequestBatchSize: f.rpc.max_request_batch_size,
      maxBodyBytes: f.rpc.max_body_bytes,
      maxHeaderBytes: f.rpc.max_header_bytes,
      unsafe: f.rpc.unsafe,
    },
    p2p: {
      laddr: checkAddress(f.p2p.laddr),
      externalAddress: f.p2p.external_address,
      persistentPeers: peers(f.p2p.persistent_peers),
      unconditionalPeerIds: splitList(f.p2p.unconditional_peer_ids).map((s) => s.toLowerCase()),
      seeds: peers(f.p2p.seeds),
      maxNumInboundPeers: f.p2p.max_num_inbound_peers,
      maxNumOutboundPeers: f.p2p.max_num_outbound_peers,
      pex: f.p2p.pex,
      seedMode: f.p2p.seed_mode,
      handshakeTimeoutMs: ms(f.p2p.handshake_timeout),
      dialTimeoutMs: ms(f.p2p.dial_timeout),
      sendRate: f.p2p.send_rate,
      recvRate: f.p2p.recv_rate,
      maxPacketMsgPayloadSize: f.p2p.max_packet_msg_payload_size,
      flushThrottleTimeoutMs: ms(f.p2p.flush_throttle_timeout),
      allowDuplicateIp: f.p2p.allow_duplicate_ip,
      addrBookStrict: f.p2p.addr_book_strict,
    },
    mempool: {
      size: f.mempool.size,
      maxTxsBytes: f.mempool.max_txs_bytes,
      maxTxBytes: f.mempool.max_tx_bytes,
      cacheSize: f.mempool.cache_size,
      recheck: f.mempool.recheck,
      maxTxsPerSender: f.mempool.max_txs_per_sender,
      priceBump: f.mempool.price_bump,
    },
    consensus: {
      timeoutProposeMs: ms(c.timeout_propose),
      timeoutProposeDeltaMs: ms(c.timeout_propose_delta),
      timeoutPrevoteMs: ms(c.timeout_prevote),
      timeoutPrevoteDeltaMs: ms(c.timeout_prevote_delta),
      timeoutPrecommitMs: ms(c.timeout_precommit),
      timeoutPrecommitDeltaMs: ms(c.timeout_precommit_delta),
      timeoutCommitMs: ms(c.timeout_commit),
      createEmptyBlocks: c.create_empty_blocks,
      createEmptyBlocksIntervalMs: ms(c.create_empty_blocks_interval),
      skipTimeoutCommit: c.skip_timeout_commit,
      doubleSignCheckHeight: c.double_sign_check_height,
    },
    txIndex: { indexer: f.tx_index.indexer as 'kv' | 'null' },
    instrumentation: {
      prometheus: f.instrumentation.prometheus,
      prometheusListenAddr: checkAddress(f.instrumentation.prometheus_listen_addr),
      maxOpenConnections: f.instrumentation.max_open_connections,
      namespace: f.instrumentation.namespace,
    },
  };
}
