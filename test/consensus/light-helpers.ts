// Light blocks whose commits are really signed (ed25519) by chosen validators, and chains of them
// linked by last_block_id: the fixtures of the light client's tests.
import { headerHash, type LightBlock, ValidatorSet, voteSignBytes } from '@noded/consensus';
import { ed25519Sign, sha256 } from '@noded/crypto';
import type { BlockId, Commit, Header, TimeNs } from '@noded/types';
import { CHAIN_ID, GENESIS_TIME, type TestKey, testKey } from './helpers.js';

export const S = 1_000_000_000n;
export const HOUR = 3600n * S;
export const KEYS = Array.from({ length: 12 }, (_, i) => testKey(100 + i));
const byAddress = new Map(KEYS.map((k) => [Buffer.from(k.address).toString('hex'), k]));

export function setOf(keys: TestKey[], powers?: bigint[]): ValidatorSet {
  return ValidatorSet.create(keys.map((k, i) => ({ pubKey: k.publicKey, votingPower: powers?.[i] ?? 10n })));
}

const EMPTY_ID: BlockId = { hash: new Uint8Array(0), partSetHeader: { total: 0, hash: new Uint8Array(0) } };

export interface BlockSpec {
  height: number;
  time?: TimeNs;
  vals: ValidatorSet;
  next?: ValidatorSet;
  lastBlockId?: BlockId;
  chainId?: string;
  /** Which validators sign (default: all). */
  signs?: (k: TestKey) => boolean;
}

/** A light block whose commit is really signed by the chosen members of `vals`. */
export function lightBlock(spec: BlockSpec): LightBlock {
  const chainId = spec.chainId ?? CHAIN_ID;
  const time = spec.time ?? GENESIS_TIME + BigInt(spec.height) * S;
  const header: Header = {
    version: { block: 11, app: 0 },
    chainId,
    height: spec.height,
    time,
    lastBlockId: spec.lastBlockId ?? EMPTY_ID,
    lastCommitHash: new Uint8Array(0),
    dataHash: sha256(new Uint8Array(0)),
    validatorsHash: spec.vals.hash(),
    nextValidatorsHash: (spec.next ?? spec.vals).hash(),
    consensusHash: sha256(new TextEncoder().encode('params')),
    appHash: sha256(new TextEncoder().encode(`app-${spec.height}`)),
    lastResultsHash: sha256(new Uint8Array(0)),
    evidenceHash: sha256(new Uint8Array(0)),
    proposerAddress: spec.vals.validators[0]!.address,
  };
  const blockId: BlockId = {
    hash: headerHash(header),
    partSetHeader: { total: 1, hash: sha256(new TextEncoder().encode(`parts-${spec.height}`)) },
  };
  const ts = time + S / 2n;
  const commit: Commit = {
    height: spec.height,
    round: 0,
    blockId,
    signatures: spec.vals.validators.map((v) => {
      const key = byAddress.get(Buffer.from(v.address).toString('hex'))!;
      if (spec.signs && !spec.signs(key)) {
        return {
          blockIdFlag: 1 as const,
          validatorAddress: new Uint8Array(0),
          timestamp: 0n,
          signature: new Uint8Array(0),
        };
      }
      const sig = ed25519Sign(
        key.seed,
        voteSignBytes(chainId, { type: 2, height: spec.height, round: 0, blockId, timestamp: ts }),
      );
      return { blockIdFlag: 2 as const, validatorAddress: v.address, timestamp: ts, signature: sig };
    }),
  };
  return { header, commit, validators: spec.vals.validators.map((v) => ({ ...v })) };
}

/** A chain 1..n whose validator set at height h is setAt(h), linked by last_block_id. */
export function chain(n: number, setAt: (h: number) => ValidatorSet): LightBlock[] {
  const out: LightBlock[] = [];
  for (let h = 1; h <= n; h++) {
    out.push(
      lightBlock({
        height: h,
        vals: setAt(h),
        next: setAt(h + 1),
        lastBlockId: out.at(-1)?.commit.blockId,
      }),
    );
  }
  return out;
}
