// libs/config: schemas, seed defaults, networks, genesis and key files. Everything an operator writes
// is parsed and checked here, and every problem is reported as `<file>: <key>: <rule>, got <value>`.

// Key files in CometBFT's formats: read here, their formats in libs/crypto (re-exported for config's users).
export {
  type Ed25519Key,
  initialValidatorStateJson,
  KeyFileError,
  newEd25519Key,
  nodeKeyJson,
  PRIV_KEY_TYPE,
  PUB_KEY_TYPE,
  type ValidatorKey,
  validatorKeyJson,
} from '@noded/crypto';
// Ethereum address checks used by genesis validation.
export { checkEthAddress, toChecksumAddress } from './src/address.js';
// Seed constants (chain ids, EVM chain ids, ports, consensus params, dev mnemonic): defined once here.
export * from './src/constants.js';
// chain-local development accounts from a mnemonic.
export * from './src/dev-accounts.js';
// NODED_<KEY> environment overrides of config.toml and app.toml keys (the cluster's services).
export { ENV_PREFIX, type Env, envNameOf } from './src/env.js';
// genesis.json: shape, validation, the runtime form and the chain-local builder.
export * from './src/genesis.js';
// Home layout and the lock that keeps two nodes (or a reset and a node) off one home.
export * from './src/home.js';
export { loadNodeKey, loadValidatorKey } from './src/keys.js';
// The loader the node and the CLI call, and the list of listeners it configures.
export {
  type ListenerConfig,
  type LoadedNodeConfig,
  listenAddresses,
  loadNodeConfig,
  parseAppToml,
  parseClientToml,
  parseConfigToml,
} from './src/load.js';
// Network presets (seed §2.1) and the WebSocket rule.
export * from './src/networks.js';
// Option records for each lib, mapped from the parsed files.
export {
  type ApiOptions,
  type CometRpcOptions,
  type ConsensusTimeouts,
  type EthRpcOptions,
  type ExecutorOpenOptions,
  type ExecutorSettings,
  executorOpenOptions,
  type InstrumentationOptions,
  toApiOptions,
  toCometRpcOptions,
  toConsensusTimeouts,
  toEthRpcOptions,
  toExecutorSettings,
  toInstrumentationOptions,
} from './src/options.js';
// The problem record every validator returns, its one-line format, and the error that carries a list.
export { ConfigError, type ConfigProblem, describeValue, formatProblem } from './src/problems.js';
// Writing the files with comments (`noded init`).
export {
  defaultAppTomlValues,
  defaultClientTomlValues,
  defaultConfigTomlValues,
  renderAppToml,
  renderClientToml,
  renderConfigToml,
} from './src/render.js';
// app_state.rewards: the fee split between validators and reward stakers (issue 25).
export * from './src/rewards.js';
// The schemas of config.toml, app.toml and client.toml: file trees (snake_case) and typed forms.
export { APP_TOML_DOCS, type AppToml, AppTomlFile, EVM_RPC_APIS } from './src/schema/app-toml.js';
export { CLIENT_TOML_DOCS, type ClientToml, ClientTomlFile } from './src/schema/client-toml.js';
export {
  CONFIG_TOML_DOCS,
  type ConfigToml,
  ConfigTomlFile,
  LOG_LEVELS,
  type LogLevel,
} from './src/schema/config-toml.js';
export { keyPaths } from './src/schema/section.js';
// app_state.staking: the validator pool's parameters and the genesis bonds (issue 25).
export * from './src/staking.js';
// The cluster's NATS subjects and JetStream stream name per chain (docs/cluster.md "NATS"); also
// exported by @noded/stream, beside the messages they carry.
export {
  blocksStreamName,
  blocksSubject,
  checkSubjectToken,
  headsSubject,
  pendingTxsSubject,
} from './src/subjects.js';
// Value parsers shared by the CLI and libs that read addresses and durations.
export {
  checkListenAddress,
  formatDuration,
  type ListenAddress,
  nodeHttpUrl,
  type PeerAddress,
  parseBtcAmount,
  parseDecimalString,
  parseDuration,
  parseListenAddress,
} from './src/values.js';
