// Counterexamples the fuzz properties found (docs/reliability.md lists them), kept as plain tests so
// that each bug stays fixed whatever the seed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeBlock, encodeBlock } from '../../libs/consensus/index.js';
import type { Block, BlockId } from '../../libs/types/index.js';

const EMPTY = new Uint8Array(0);
const nilId = (): BlockId => ({ hash: EMPTY, partSetHeader: { total: 0, hash: EMPTY } });

function blockWithChainId(chainId: string): Block {
  return {
    header: {
      version: { block: 0, app: 0 },
      chainId,
      height: 0,
      time: 0n,
      lastBlockId: nilId(),
      lastCommitHash: EMPTY,
      dataHash: EMPTY,
      validatorsHash: EMPTY,
      nextValidatorsHash: EMPTY,
      consensusHash: EMPTY,
      appHash: EMPTY,
      lastResultsHash: EMPTY,
      evidenceHash: EMPTY,
      proposerAddress: EMPTY,
    },
    data: { txs: [] },
    evidence: [],
    lastCommit: null,
  };
}

describe('fuzz regressions: consensus codec', () => {
  it('a header whose chain id starts with U+FEFF decodes with it (the BOM was dropped)', () => {
    const b = blockWithChainId('\uFEFF');
    assert.deepStrictEqual(decodeBlock(encodeBlock(b)), b);
    const c = blockWithChainId('\uFEFFchain-local');
    assert.equal(decodeBlock(encodeBlock(c)).header.chainId, '\uFEFFchain-local');
  });
});
