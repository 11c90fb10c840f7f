// libs/stream: the executor's stream of committed heights (proto/noded/stream/v1), framework- and
// transport-free: subject names and the message codec. The NATS client lives in services/.

// Subjects and the JetStream stream name, per chain. Named in @noded/config (pure functions of the
// chain id), so the services' settings and NATS logins use them without loading the stream's codec.
export {
  blocksStreamName,
  blocksSubject,
  checkSubjectToken,
  headsSubject,
  pendingTxsSubject,
} from '@noded/config';
// CommittedRecord <-> CommittedHeight bytes, NewHead, and the error naming a bad field.
export {
  decodeCommitted,
  decodeHead,
  decodePendingTxs,
  encodeCommitted,
  encodeHead,
  encodePendingTxs,
  type Head,
  StreamFieldError,
} from './src/codec.js';
// A read replica's commit check: each height's light block verified and tied to its Ethereum block.
export {
  CommitCheckError,
  CommitChecker,
  type CommitCheckOptions,
  type CommitErrorCode,
} from './src/commit.js';
// A read replica's store: heights applied in order, parent hash checked, idempotent by height.
export { ReplicaError, type ReplicaErrorCode, ReplicaStore } from './src/replica.js';
