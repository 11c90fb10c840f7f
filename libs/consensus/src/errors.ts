// Typed errors of the consensus library. Each carries a stable code and a message that names the
// bad value and the rule it broke, so operators and callers can act on them.

export type ConsensusErrorCode =
  | 'INVALID_OPTIONS'
  | 'INVALID_ENCODING'
  | 'INVALID_BLOCK'
  | 'INVALID_VOTE'
  | 'INVALID_COMMIT'
  | 'INVALID_EVIDENCE'
  | 'INVALID_VALIDATOR_SET'
  | 'DOUBLE_SIGN'
  | 'PRIVVAL_STATE'
  | 'WAL'
  | 'HANDSHAKE'
  | 'DOUBLE_SIGN_RISK'
  | 'STOPPED'
  | 'TIMEOUT'
  /** A dev chain control (mine, time) asked of a node that does not allow them. */
  | 'DEV_CONTROLS_REFUSED'
  /** A dev block time that is not after the last block's. */
  | 'INVALID_TIME'
  /** A dev chain revert that cannot be done or finished (evm_revert). */
  | 'ROLLBACK';

export class ConsensusError extends Error {
  constructor(
    readonly code: ConsensusErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ConsensusError';
  }
}

/** Refused signature: signing would break the double-sign guard (regression or conflicting data). */
export class DoubleSignError extends ConsensusError {
  constructor(message: string) {
    super('DOUBLE_SIGN', message);
    this.name = 'DoubleSignError';
  }
}

/** The application and the stores disagree in a way the handshake cannot repair. */
export class HandshakeError extends ConsensusError {
  constructor(message: string) {
    super('HANDSHAKE', message);
    this.name = 'HandshakeError';
  }
}
