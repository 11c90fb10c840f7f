// A deterministic block workload (same seed -> same blocks): native transfers to old and new
// accounts, contract deployment, storage writes and clears, CREATE2, nested calls, reverts and a
// self-destruct burn. Used by the determinism test and by the crash-consistency driver.
import { RLP } from '@ethereumjs/rlp';
import { keccak256 } from '@noded/crypto';
import type { Hex } from '@noded/types';
import { prng } from '../prng.js';
import { addr, ETH, key, signTx } from './helpers.js';

export interface WorkloadCode {
  lab: Hex;
  burn: Hex;
}

export const WORKLOAD_KEYS = Array.from({ length: 8 }, (_, i) => key(100 + i));

export function workloadGenesis(): Array<{ address: Hex; balance: bigint }> {
  return WORKLOAD_KEYS.map((k) => ({ address: addr(k), balance: 1000n * ETH }));
}

function word(v: bigint | Hex): string {
  return (typeof v === 'bigint' ? v.toString(16) : v.slice(2)).padStart(64, '0');
}

/** Function selectors of LAB_SOL (keccak of the signature, first 4 bytes). */
export interface Selectors {
  bump: string;
  deploy: string;
  setChild: string;
  fail: string;
  burnGas: string;
}

/** Address of the contract `from` creates with `nonce` (keccak(rlp([from, nonce]))[12:]). */
function createAddress(from: Hex, nonce: number): Hex {
  const enc = RLP.encode([Buffer.from(from.slice(2), 'hex'), nonce]);
  return `0x${Buffer.from(keccak256(enc).subarray(12)).toString('hex')}`;
}

/**
 * The blocks 1..count of the workload (raw transactions per block). Blocks below `from` are
 * generated but left unsigned (empty) so a resuming process does not pay for them.
 */
export function workloadBlocks(
  count: number,
  seed: number,
  code: WorkloadCode,
  sel: Selectors,
  from = 1,
): Uint8Array[][] {
  const r = prng(seed);
  const nonces = WORKLOAD_KEYS.map(() => 0n);
  const sender0 = addr(WORKLOAD_KEYS[0]);
  const lab = createAddress(sender0, 0);
  const children: Hex[] = [];
  const blocks: Uint8Array[][] = [];
  let signing = false;
  const send = (i: number, to: Hex | null, data: Hex, value = 0n, gas = 600_000n) => {
    const nonce = nonces[i]++;
    if (!signing) return new Uint8Array(0);
    return signTx(WORKLOAD_KEYS[i], {
      nonce,
      to,
      data,
      value,
      gas,
      maxFee: 50_000_000_000n,
      tip: 1_000_000_000n,
    });
  };
  for (let h = 1; h <= count; h++) {
    signing = h >= from;
    const txs: Uint8Array[] = [];
    if (h === 1) txs.push(send(0, null, code.lab, 0n, 5_000_000n));
    const n = 3 + Math.floor(r() * 8);
    for (let t = 0; t < n; t++) {
      const i = 1 + Math.floor(r() * (WORKLOAD_KEYS.length - 1));
      const kind = r();
      if (kind < 0.35) {
        const to =
          r() < 0.5
            ? addr(WORKLOAD_KEYS[Math.floor(r() * WORKLOAD_KEYS.length)])
            : addr(key(1000 + Math.floor(r() * 5000)));
        txs.push(send(i, to, '0x', BigInt(1 + Math.floor(r() * 1e6)) * 1_000_000_000n, 21_000n));
      } else if (kind < 0.55) {
        txs.push(send(i, lab, `0x${sel.bump}` as Hex));
      } else if (kind < 0.65) {
        const salt = `0x${Math.floor(r() * 2 ** 48)
          .toString(16)
          .padStart(64, '0')}` as Hex;
        txs.push(send(i, lab, `0x${sel.deploy}${word(salt)}${word(BigInt(h))}` as Hex));
        children.push(salt);
      } else if (kind < 0.8 && children.length > 0) {
        // setChild on a predicted child address is done through deploy's event in real life; here
        // the child may not exist (then the call reverts), which exercises reverts too.
        const target = addr(key(2000 + Math.floor(r() * 10)));
        txs.push(send(i, lab, `0x${sel.setChild}${word(target)}${word(BigInt(Math.floor(r() * 3)))}` as Hex));
      } else if (kind < 0.88) {
        txs.push(send(i, lab, `0x${sel.fail}${word(BigInt(1 + Math.floor(r() * 3)))}` as Hex, 0n, 100_000n));
      } else if (kind < 0.94) {
        txs.push(send(i, null, code.burn, ETH / 100n));
      } else {
        txs.push(send(i, lab, `0x${sel.burnGas}${word(BigInt(Math.floor(r() * 40)))}` as Hex));
      }
    }
    blocks.push(signing ? txs : []);
  }
  return blocks;
}
