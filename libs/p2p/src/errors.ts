// Typed errors of the P2P layer: each names the peer's bad value and the rule it broke.

export type P2PErrorCode =
  | 'OVERSIZED'
  | 'INVALID_MESSAGE'
  | 'HANDSHAKE'
  | 'WRONG_NETWORK'
  | 'WRONG_VERSION'
  | 'WRONG_ID'
  | 'PEER_LIMIT'
  | 'DUPLICATE'
  | 'SLOW_PEER'
  | 'INVALID_OPTIONS';

export class P2PError extends Error {
  constructor(
    readonly code: P2PErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'P2PError';
  }
}
