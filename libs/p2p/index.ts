// libs/p2p: the peer-to-peer layer on :26656 (libp2p: TCP, noise, yamux) with CometBFT's peer model.

// Peer exchange: the address book (config/addrbook.json) and the PEX channel with seeds.
export {
  AddressBook,
  type AddressBookOptions,
  type BookEntry,
  formatPeerAddress,
  isRoutable,
  MAX_BOOK_SIZE,
  MAX_FAILED_ATTEMPTS,
  parsePeerAddress,
  peerAddresses,
} from './src/addrbook.js';
// Block sync's own protocol (/noded/blocksync/1): the runtime's BlockSyncNetwork port over the host.
export { BLOCKSYNC_PROTOCOL, BlockSyncChannel } from './src/blocksync-channel.js';
// The consensus runtime's network port over the host.
export { CONSENSUS_PROTOCOL, ConsensusChannel, consensusFrames } from './src/consensus-channel.js';
export { P2PError, type P2PErrorCode } from './src/errors.js';
// Frames of a channel stream, with their size limit.
export { FrameReader, frame } from './src/frames.js';
// The host: identity, handshake, persistent peers, limits, framed channels.
export {
  ByteRate,
  type Channel,
  type ChannelHost,
  HANDSHAKE_PROTOCOL,
  P2PHost,
  type P2PHostOptions,
  type PeerAddress,
  type PeerEvents,
} from './src/host.js';
// Light blocks for light nodes: requests answered from a full node's block store.
export {
  type BlockStoreReads,
  encodeLightRequest,
  LIGHT_PROTOCOL,
  type LightBlockSource,
  LightChannel,
  type LightChannelOptions,
  LightRequestError,
  type LightRequestErrorCode,
  lightBlockSourceOf,
  MAX_BAD_REQUESTS,
  MAX_LIGHT_MESSAGE_BYTES,
  MAX_REQUESTS_IN_FLIGHT,
} from './src/light-channel.js';
// Mempool gossip: admitted transactions to every peer, peers' transactions through CheckTx; on
// /noded/mempool/2 each with its trace context, so a transaction's trace goes on at the next node.
export {
  decodeTracedTxBatch,
  decodeTxBatch,
  encodeTracedTxBatch,
  encodeTxBatch,
  type GossipPool,
  MAX_GOSSIP_TRACE_BYTES,
  MEMPOOL_PROTOCOL,
  MEMPOOL_TRACED_PROTOCOL,
  MempoolChannel,
  type TracedTx,
} from './src/mempool-channel.js';
// The handshake's node info and its compatibility rule.
export {
  compatibility,
  decodeNodeInfo,
  encodeNodeInfo,
  isWireNodeId,
  MAX_NODE_INFO_BYTES,
  type NodeInfo,
  P2P_PROTOCOL_VERSION,
} from './src/nodeinfo.js';
export {
  decodePex,
  encodePex,
  MAX_PEX_ADDRS,
  MAX_PEX_MESSAGE_BYTES,
  NEED_ADDRESSES,
  PEX_PROTOCOL,
  type PexMessage,
  type PexOptions,
  PexReactor,
} from './src/pex-channel.js';
