// FilePV: the validator's signer with CometBFT's double-sign guard (privval/file.go).
// Key:   config/priv_validator_key.json (libs/crypto key-files.ts).
// State: data/priv_validator_state.json
//   {"height":"N","round":R,"step":S,"signature":"<base64>","signbytes":"<HEX>"}
//   steps: 1 propose, 2 prevote, 3 precommit. The state is written to a temp file, fsynced and renamed
//   over the old one BEFORE the signature is returned. A request below the last height/round/step is
//   refused; the same height/round/step returns the stored signature when the sign bytes are equal or
//   differ only in the timestamp (then the stored timestamp is used), and is refused otherwise.

import { readFileSync } from 'node:fs';
import { ed25519Address, ed25519Sign, KeyFileError, parseValidatorKeyJson } from '@noded/crypto';
import type { Proposal, TimeNs, Vote } from '@noded/types';
import {
  decodeVoteSignBytes,
  parseSignBytes,
  proposalSignBytes,
  voteExtensionSignBytes,
  voteSignBytes,
} from './codec/types.js';
import { ConsensusError, DoubleSignError } from './errors.js';
import { type DurableFs, NodeFs } from './fs.js';
import { bytesEqual, hex } from './hash.js';

/** The key file's text; a read error names the file (libs/config's loadValidatorKey reads it alike). */
function readKeyFile(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new KeyFileError(
      file,
      `cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
}

export const STEP_PROPOSE = 1;
export const STEP_PREVOTE = 2;
export const STEP_PRECOMMIT = 3;

export interface LastSignState {
  height: number;
  round: number;
  step: number;
  signature: Uint8Array;
  signBytes: Uint8Array;
}

/** Serializes the state exactly as CometBFT writes priv_validator_state.json. */
export function lastSignStateJson(s: LastSignState): string {
  const body: Record<string, unknown> = { height: String(s.height), round: s.round, step: s.step };
  if (s.signature.length > 0) body.signature = Buffer.from(s.signature).toString('base64');
  if (s.signBytes.length > 0) body.signbytes = hex(s.signBytes).toUpperCase();
  return `${JSON.stringify(body, null, 2)}\n`;
}

export function parseLastSignState(file: string, text: string): LastSignState {
  const fail = (why: string): never => {
    throw new ConsensusError('PRIVVAL_STATE', `${file}: ${why}`);
  };
  let j: Record<string, unknown>;
  try {
    j = JSON.parse(text) as Record<string, unknown>;
  } catch (err) {
    return fail(
      `not valid JSON (${(err as Error).message}); refusing to sign without a trustworthy last-sign state`,
    );
  }
  if (!j || typeof j !== 'object') return fail('must be a JSON object');
  const height =
    typeof j.height === 'string' ? Number(j.height) : typeof j.height === 'number' ? j.height : Number.NaN;
  if (!Number.isSafeInteger(height) || height < 0)
    fail(`height: must be a non-negative integer string, got ${JSON.stringify(j.height)}`);
  const round = j.round ?? 0;
  if (typeof round !== 'number' || !Number.isInteger(round) || round < 0)
    fail(`round: must be a non-negative integer, got ${JSON.stringify(j.round)}`);
  const step = j.step ?? 0;
  if (typeof step !== 'number' || !Number.isInteger(step) || step < 0 || step > 3)
    fail(`step: must be 0..3, got ${JSON.stringify(j.step)}`);
  const signature =
    typeof j.signature === 'string' ? new Uint8Array(Buffer.from(j.signature, 'base64')) : new Uint8Array(0);
  if (
    j.signbytes !== undefined &&
    (typeof j.signbytes !== 'string' || !/^([0-9a-fA-F]{2})*$/.test(j.signbytes))
  )
    fail('signbytes: must be a hex string');
  const signBytes =
    typeof j.signbytes === 'string' ? new Uint8Array(Buffer.from(j.signbytes, 'hex')) : new Uint8Array(0);
  if (signBytes.length > 0 && signature.length === 0) fail('signbytes present without a signature');
  return { height, round: round as number, step: step as number, signature, signBytes };
}

export class FilePV {
  private state: LastSignState;
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly seed: Uint8Array,
    readonly pubKey: Uint8Array,
    private readonly stateFile: string,
    private readonly fs: DurableFs,
    state: LastSignState,
  ) {
    this.state = state;
  }

  address(): Uint8Array {
    return ed25519Address(this.pubKey);
  }

  /**
   * Loads the key (CometBFT key file) and the last-sign state. A missing state file is created at
   * height 0; an unreadable one is an error (never silently reset).
   */
  static async load(keyFile: string, stateFile: string, fs: DurableFs = new NodeFs()): Promise<FilePV> {
    const key = parseValidatorKeyJson(keyFile, readKeyFile(keyFile));
    return FilePV.fromKey({ seed: key.seed, publicKey: key.publicKey }, stateFile, fs);
  }

  static async fromKey(
    key: { seed: Uint8Array; publicKey: Uint8Array },
    stateFile: string,
    fs: DurableFs,
  ): Promise<FilePV> {
    const bytes = await fs.readFile(stateFile);
    let state: LastSignState;
    if (bytes === undefined) {
      state = { height: 0, round: 0, step: 0, signature: new Uint8Array(0), signBytes: new Uint8Array(0) };
      await fs.writeAtomic(stateFile, new TextEncoder().encode(lastSignStateJson(state)));
    } else {
      state = parseLastSignState(stateFile, new TextDecoder().decode(bytes));
    }
    return new FilePV(key.seed, key.publicKey, stateFile, fs, state);
  }

  /**
   * Moves the double-sign guard back to `height` (nothing signed after it), written atomically:
   * ONLY for the dev chain's evm_revert, where this node is the single validator and the heights
   * above `height` are deleted from every store before they are signed again. The runtime calls it
   * only when its dev controls are available; nothing else may.
   */
  async rewindForDevChain(height: number): Promise<void> {
    await this.serial(async () => {
      this.state = await FilePV.rewindStateFile(this.fs, this.stateFile, height);
    });
  }

  /** rewindForDevChain on the state file alone (finishing an interrupted revert at startup). */
  static async rewindStateFile(fs: DurableFs, stateFile: string, height: number): Promise<LastSignState> {
    const state: LastSignState = {
      height,
      round: 0,
      step: 0,
      signature: new Uint8Array(0),
      signBytes: new Uint8Array(0),
    };
    await fs.writeAtomic(stateFile, new TextEncoder().encode(lastSignStateJson(state)));
    return state;
  }

  lastSignState(): Readonly<LastSignState> {
    return this.state;
  }

  /** Returns true when this HRS was already signed (reuse the stored signature); throws on regression. */
  private checkHRS(height: number, round: number, step: number): boolean {
    const s = this.state;
    if (s.height > height)
      throw new DoubleSignError(`height regression: got ${height}, last signed height ${s.height}`);
    if (s.height === height) {
      if (s.round > round)
        throw new DoubleSignError(
          `round regression at height ${height}: got ${round}, last signed round ${s.round}`,
        );
      if (s.round === round) {
        if (s.step > step)
          throw new DoubleSignError(
            `step regression at height ${height} round ${round}: got ${step}, last signed step ${s.step}`,
          );
        if (s.step === step) {
          if (s.signBytes.length > 0) return true;
          throw new DoubleSignError(
            `already signed height ${height} round ${round} step ${step} but no sign bytes are stored`,
          );
        }
      }
    }
    return false;
  }

  private async sign(
    height: number,
    round: number,
    step: number,
    signBytes: Uint8Array,
  ): Promise<{ signature: Uint8Array; timestamp?: TimeNs }> {
    if (this.checkHRS(height, round, step)) {
      if (bytesEqual(signBytes, this.state.signBytes)) return { signature: this.state.signature };
      const last = parseSignBytes(this.state.signBytes);
      const next = parseSignBytes(signBytes);
      if (last.withoutTimestamp === next.withoutTimestamp)
        return { signature: this.state.signature, timestamp: last.timestamp };
      throw new DoubleSignError(
        `conflicting data: height ${height} round ${round} step ${step} was already signed for different data`,
      );
    }
    const signature = ed25519Sign(this.seed, signBytes);
    const next: LastSignState = { height, round, step, signature, signBytes };
    await this.fs.writeAtomic(this.stateFile, new TextEncoder().encode(lastSignStateJson(next)));
    this.state = next;
    return { signature };
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => {});
    return run;
  }

  /**
   * The vote this signer already signed at the height/round/step of `vote`, rebuilt from the stored
   * sign bytes and signature (undefined if it signed none there). After a crash between signing and
   * the WAL write, this vote never left the node; sending it now is not a new signature.
   */
  storedVote(chainId: string, vote: Vote): Vote | undefined {
    const s = this.state;
    const step = vote.type === 1 ? STEP_PREVOTE : STEP_PRECOMMIT;
    if (s.height !== vote.height || s.round !== vote.round || s.step !== step || s.signBytes.length === 0)
      return undefined;
    const d = decodeVoteSignBytes(s.signBytes);
    if (d.chainId !== chainId || d.type !== vote.type) return undefined;
    return { ...vote, blockId: d.blockId, timestamp: d.timestamp, signature: s.signature };
  }

  /**
   * Signs a vote (prevote step 2, precommit step 3) or refuses with DoubleSignError. With
   * `signExtension` (a precommit at a height with vote extensions) it also signs `vote.extension`
   * (empty when absent). The extension signature is outside the double-sign guard, as in CometBFT:
   * an extension is not a vote, and after a restart the application may extend differently, so it
   * is signed again each time.
   */
  signVote(chainId: string, vote: Vote, signExtension = false): Promise<Vote> {
    return this.serial(async () => {
      const step = vote.type === 1 ? STEP_PREVOTE : STEP_PRECOMMIT;
      const { signature, timestamp } = await this.sign(
        vote.height,
        vote.round,
        step,
        voteSignBytes(chainId, vote),
      );
      const signed: Vote = { ...vote, timestamp: timestamp ?? vote.timestamp, signature };
      return signExtension ? this.withExtensionSignature(chainId, signed) : signed;
    });
  }

  /** `vote` with its extension (empty when absent) signed over voteExtensionSignBytes. */
  withExtensionSignature(chainId: string, vote: Vote): Vote {
    const extension = vote.extension ?? new Uint8Array(0);
    const extensionSignature = ed25519Sign(
      this.seed,
      voteExtensionSignBytes(chainId, { height: vote.height, round: vote.round, extension }),
    );
    return { ...vote, extension, extensionSignature };
  }

  signProposal(chainId: string, proposal: Proposal): Promise<Proposal> {
    return this.serial(async () => {
      const { signature, timestamp } = await this.sign(
        proposal.height,
        proposal.round,
        STEP_PROPOSE,
        proposalSignBytes(chainId, proposal),
      );
      return { ...proposal, timestamp: timestamp ?? proposal.timestamp, signature };
    });
  }
}
