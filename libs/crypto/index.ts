// libs/crypto: hashing and signatures, each through the fastest implementation available here.
// sha256 and keccak256 (libs/native's add-on, else node:crypto and the keccak package's binding).

// ed25519 for consensus and node keys; CometBFT addresses and node IDs.
export {
  type Ed25519KeyPair,
  ed25519Address,
  ed25519Generate,
  ed25519PublicKey,
  ed25519Sign,
  ed25519Verify,
  nodeIdFromPublicKey,
} from './src/ed25519.js';
export { keccak256, sha256 } from './src/hash.js';
// CometBFT's key files (node_key.json, priv_validator_key.json), parsed and written (never read
// here): consensus' FilePV parses its key without importing libs/config, which imports consensus.
export {
  type Ed25519Key,
  initialValidatorStateJson,
  KeyFileError,
  newEd25519Key,
  nodeKeyJson,
  PRIV_KEY_TYPE,
  PUB_KEY_TYPE,
  parseNodeKeyJson,
  parseValidatorKeyJson,
  type ValidatorKey,
  validatorKeyJson,
} from './src/key-files.js';
// The RFC 6962 Merkle tree of CometBFT (header data_hash, transaction proofs).
export { merkleAuntsAll, merkleProof, merkleRoot, merkleRootFromProof } from './src/merkle.js';
// Which implementations are native here (both are on linux-x64, from the packages' prebuilt binaries).
export { nativeBackends } from './src/native.js';
// Bounds of the items of an RLP list (the fields of a signed transaction), without decoding it.
export { rlpListBounds } from './src/rlp-bounds.js';
// secp256k1 for Ethereum accounts.
export {
  ethAddressFromPrivateKey,
  ethAddressFromPublicKey,
  isValidSecp256k1PrivateKey,
  secp256k1PublicKey,
  secp256k1Recover,
  secp256k1Sign,
} from './src/secp256k1.js';
