// libs/config: schemas, seed defaults, networks, genesis and key files.
// Key files in CometBFT's formats.

// genesis.json shape.
export * from './src/genesis.js';
export * from './src/keys.js';
