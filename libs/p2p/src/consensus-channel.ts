// The consensus channel: the runtime's ConsensusNetwork port over the P2P host. Messages travel in
// the consensus library's wire envelope; a peer whose bytes do not decode is disconnected and
// nothing it sent reaches the engine.
import {
  type ConsensusMessage,
  type ConsensusNetwork,
  decodeConsensusMessage,
  encodeConsensusMessage,
} from '../../consensus/index.js';
import type { P2PHost } from './host.js';

export const CONSENSUS_PROTOCOL = '/noded/consensus/1';
/** Room for the envelope and the proposal around a block of consensus_params.block.max_bytes. */
const ENVELOPE_SLACK = 1024 * 1024;

export class ConsensusChannel implements ConsensusNetwork {
  private readonly handlers = new Set<(peer: string, message: ConsensusMessage) => void>();

  constructor(
    private readonly host: P2PHost,
    maxBlockBytes: number,
  ) {
    host.register({
      protocol: CONSENSUS_PROTOCOL,
      maxMessageBytes: maxBlockBytes + ENVELOPE_SLACK,
      onMessage: (peer, payload) => {
        // A decoding error propagates: the host disconnects the peer with it as the reason.
        const message = decodeConsensusMessage(payload);
        for (const h of this.handlers) h(peer, message);
      },
    });
  }

  broadcast(message: ConsensusMessage): void {
    if (this.host.peerCount === 0) return;
    this.host.broadcast(CONSENSUS_PROTOCOL, encodeConsensusMessage(message));
  }

  send(peer: string, message: ConsensusMessage): void {
    this.host.send(peer, CONSENSUS_PROTOCOL, encodeConsensusMessage(message));
  }

  /** The runtime found the peer's message forged or malformed: it is disconnected. */
  report(peer: string, reason: string): void {
    this.host.disconnect(peer, `invalid consensus message: ${reason}`);
  }

  subscribe(handler: (peer: string, message: ConsensusMessage) => void): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }
}
