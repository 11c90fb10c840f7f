// The block sync channel (`/noded/blocksync/1`): the runtime's BlockSyncNetwork port over the P2P
// host, an ordinary P2PHost channel (protocol, message size limit, receiver), so a gateway can relay
// it without knowing it. Messages are CometBFT's blocksync reactor's: status request and status
// (the stored base and height), block request by height, the block with its commit (and extended
// commit where vote extensions are on), or "no such block". A block travels whole, as CometBFT's
// blocksync sends it, so the message limit is the block limit plus room for its commits. A peer whose
// bytes do not decode, or whose block the runtime finds invalid, is disconnected.
import {
  type BlockSyncMessage,
  type BlockSyncNetwork,
  decodeBlockSyncMessage,
  encodeBlockSyncMessage,
} from '@noded/consensus';
import type { ChannelHost } from './host.js';

export const BLOCKSYNC_PROTOCOL = '/noded/blocksync/1';

/** Room for a block's commit and extended commit beside it (100 validators' extensions fit twice). */
const COMMIT_SLACK = 4 * 1024 * 1024;

export class BlockSyncChannel implements BlockSyncNetwork {
  private readonly handlers = new Set<(peer: string, message: BlockSyncMessage) => void>();
  private readonly downs = new Set<(peer: string) => void>();

  constructor(
    private readonly host: ChannelHost,
    maxBlockBytes: number,
  ) {
    host.register({
      protocol: BLOCKSYNC_PROTOCOL,
      maxMessageBytes: maxBlockBytes + COMMIT_SLACK,
      // An error thrown here (undecodable bytes) disconnects the peer with it as the reason.
      onMessage: (peer, payload) => {
        const m = decodeBlockSyncMessage(payload);
        for (const h of this.handlers) h(peer, m);
      },
    });
    host.onPeer({
      // A new peer is asked for its range at once, rather than at the next status round.
      up: (peer) => this.send(peer, { kind: 'statusRequest' }),
      down: (peer) => {
        for (const d of this.downs) d(peer);
      },
    });
  }

  broadcast(message: BlockSyncMessage): void {
    if (this.host.peerCount === 0) return;
    this.host.broadcast(BLOCKSYNC_PROTOCOL, encodeBlockSyncMessage(message));
  }

  send(peer: string, message: BlockSyncMessage): void {
    this.host.send(peer, BLOCKSYNC_PROTOCOL, encodeBlockSyncMessage(message));
  }

  subscribe(
    handler: (peer: string, message: BlockSyncMessage) => void,
    peerDown: (peer: string) => void,
  ): () => void {
    this.handlers.add(handler);
    this.downs.add(peerDown);
    return () => {
      this.handlers.delete(handler);
      this.downs.delete(peerDown);
    };
  }

  /** The runtime found the peer's block invalid: it is disconnected (and banned for a while). */
  report(peer: string, reason: string): void {
    this.host.disconnect(peer, `invalid block sync message: ${reason}`);
  }
}
