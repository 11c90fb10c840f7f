// The state manager the EVM runs against: a block-level overlay over a read-only source (committed
// state at some height), with an undo journal for checkpoints. EthereumJS' SimpleStateManager
// copies its maps on every checkpoint (15% of transaction time here); an undo log costs one entry
// per write instead.
import type { AccountFields, StateManagerInterface, StorageDump } from '@ethereumjs/common';
import { Account, type Address } from '@ethereumjs/util';
import { keccak256 } from '@noded/crypto';
import { equal, stripZeros, toHex, toKey } from '../bytes.js';
import { type AccountData, EMPTY_CODE_HASH, newAccount } from './account.js';
import type { BlockOverlay } from './db.js';

// EthereumJS hands the same Address objects (tx sender and target, block coinbase) to the state
// many times per call; their hex keys are worth keeping instead of re-encoding 20 bytes each time.
const ADDRESS_KEYS = new WeakMap<Uint8Array, string>();

function addrKey(address: Address): string {
  const b = address.bytes;
  let k = ADDRESS_KEYS.get(b);
  if (k === undefined) {
    k = toKey(b);
    ADDRESS_KEYS.set(b, k);
  }
  return k;
}

/** Committed state as the overlay reads it (addresses and slots as lowercase hex, no 0x). */
export interface StateSource {
  account(addr: string): Promise<AccountData | undefined>;
  storage(addr: string, slot: string): Promise<Uint8Array>;
  code(codeHash: Uint8Array): Promise<Uint8Array>;
}

type Undo =
  | { k: 0; addr: string; prev: AccountData | null | undefined }
  | { k: 1; addr: string; slot: string; prev: Uint8Array | undefined }
  | { k: 2; addr: string; prevSlots: Map<string, Uint8Array> | undefined; prevCleared: boolean }
  | { k: 3; amount: bigint };

const EMPTY_BYTES = new Uint8Array(0);

function toEjs(d: AccountData): Account {
  return new Account(d.nonce, d.balance, d.storageRoot, d.codeHash);
}

function fromEjs(a: Account): AccountData {
  return { nonce: a.nonce, balance: a.balance, storageRoot: a.storageRoot, codeHash: a.codeHash };
}

// The overlay's maps are replaced, never cleared. V8 gives a cleared Map its new table in the
// generation of the old one, so clearing the maps of a long-lived overlay (the pooled call VMs,
// the block's state across its transactions) allocated every call's and transaction's tables in
// the old generation: about 1.5 KB per eth_call, which filled it at 20 MB/s under a call load and
// brought mark-compacts every few seconds. A new Map starts young and dies young.
export class JournaledState implements StateManagerInterface {
  accounts = new Map<string, AccountData | null>();
  storage = new Map<string, Map<string, Uint8Array>>();
  cleared = new Set<string>();
  code = new Map<string, Uint8Array>();
  /** Balance destroyed with deleted accounts (self-destruct of a contract created in the same tx). */
  burned = 0n;
  private journal: Undo[] = [];
  private marks: number[] = [];
  private original = new Map<string, Uint8Array>();
  /** Called before each state read; throws to abort a run that exceeded its time limit. */
  onAccess: (() => void) | undefined;

  readonly originalStorageCache = {
    get: async (address: Address, key: Uint8Array): Promise<Uint8Array> => {
      const k = addrKey(address) + toKey(key);
      const v = this.original.get(k);
      if (v !== undefined) return v;
      const cur = await this.getStorage(address, key);
      this.original.set(k, cur);
      return cur;
    },
    clear: (): void => {
      if (this.original.size > 0) this.original = new Map();
    },
  };

  /** eth_call: the sender's code, hidden from runTx's EOA check until the sender's next write. */
  private hidden: { addr: string; codeHash: Uint8Array } | undefined;

  constructor(private source: StateSource) {}

  /** Empties the overlay and points it at another source, so a VM built on it can be reused. */
  reset(source: StateSource): void {
    this.source = source;
    if (this.accounts.size > 0) this.accounts = new Map();
    if (this.storage.size > 0) this.storage = new Map();
    if (this.cleared.size > 0) this.cleared = new Set();
    if (this.code.size > 0) this.code = new Map();
    this.originalStorageCache.clear();
    this.burned = 0n;
    this.journal.length = 0;
    this.marks.length = 0;
    this.onAccess = undefined;
    this.hidden = undefined;
  }

  /**
   * geth skips the "sender is an EOA" check for eth_call; EthereumJS cannot. The sender's code hash
   * reads empty until runTx writes the sender back (its nonce bump, before any execution), which
   * restores the real code hash.
   */
  hideSenderCode(addr: string, account: AccountData): void {
    this.hidden = { addr, codeHash: account.codeHash };
    this.accounts.set(addr, { ...account, codeHash: EMPTY_CODE_HASH });
  }

  /**
   * Ends hideSenderCode for a block's impersonated sender (docs/json-rpc.md, "Impersonation"):
   * whether or not runTx wrote the sender back, the account keeps its code hash.
   */
  restoreSenderCode(addr: string, codeHash: Uint8Array): void {
    this.hidden = undefined;
    const cur = this.accounts.get(addr);
    if (cur && equal(cur.codeHash, EMPTY_CODE_HASH)) this.accounts.set(addr, { ...cur, codeHash });
  }

  overlay(): BlockOverlay {
    return { accounts: this.accounts, storage: this.storage, cleared: this.cleared, code: this.code };
  }

  // ------------------------------------------------------------ accounts

  async readAccount(addr: string): Promise<AccountData | undefined> {
    this.onAccess?.();
    const o = this.accounts.get(addr);
    if (o !== undefined) return o ?? undefined;
    return this.source.account(addr);
  }

  private setAccount(addr: string, value: AccountData | null): void {
    this.journal.push({ k: 0, addr, prev: this.accounts.get(addr) });
    this.accounts.set(addr, value);
  }

  async getAccount(address: Address): Promise<Account | undefined> {
    const d = await this.readAccount(addrKey(address));
    return d ? toEjs(d) : undefined;
  }

  async putAccount(address: Address, account?: Account): Promise<void> {
    if (account === undefined) return this.deleteAccount(address);
    const addr = addrKey(address);
    const data = fromEjs(account);
    if (this.hidden?.addr === addr) {
      data.codeHash = this.hidden.codeHash;
      this.hidden = undefined;
    }
    this.setAccount(addr, data);
  }

  async deleteAccount(address: Address): Promise<void> {
    const addr = addrKey(address);
    const prev = await this.readAccount(addr);
    if (prev && prev.balance > 0n) {
      this.burned += prev.balance;
      this.journal.push({ k: 3, amount: prev.balance });
    }
    this.setAccount(addr, null);
    this.clearSlots(addr);
  }

  /** Records native coin destroyed by the EVM (journaled: a reverted frame un-burns). */
  recordBurn(amount: bigint): void {
    this.burned += amount;
    this.journal.push({ k: 3, amount });
  }

  async modifyAccountFields(address: Address, fields: AccountFields): Promise<void> {
    const addr = addrKey(address);
    const cur = { ...((await this.readAccount(addr)) ?? newAccount()) };
    if (fields.nonce !== undefined) cur.nonce = fields.nonce;
    if (fields.balance !== undefined) cur.balance = fields.balance;
    if (fields.storageRoot !== undefined) cur.storageRoot = fields.storageRoot;
    if (fields.codeHash !== undefined) cur.codeHash = fields.codeHash;
    this.setAccount(addr, cur);
  }

  /** Writes an account record as a whole (journaled like any write); see BlockRun's plain transfers. */
  writeAccount(addr: string, data: AccountData): void {
    this.setAccount(addr, data);
  }

  /** Direct balance credit used for fee distribution (journaled like any write). */
  async addBalance(addr: string, amount: bigint): Promise<void> {
    const cur = { ...((await this.readAccount(addr)) ?? newAccount()) };
    cur.balance += amount;
    this.setAccount(addr, cur);
  }

  // ------------------------------------------------------------ code

  async putCode(address: Address, value: Uint8Array): Promise<void> {
    const addr = addrKey(address);
    const hash = value.length === 0 ? EMPTY_CODE_HASH : keccak256(value);
    if (value.length > 0) this.code.set(toKey(hash), value);
    const cur = { ...((await this.readAccount(addr)) ?? newAccount()) };
    cur.codeHash = hash;
    this.setAccount(addr, cur);
  }

  async getCode(address: Address): Promise<Uint8Array> {
    const a = await this.readAccount(addrKey(address));
    if (!a || equal(a.codeHash, EMPTY_CODE_HASH)) return EMPTY_BYTES;
    return this.codeByHash(a.codeHash);
  }

  async codeByHash(hash: Uint8Array): Promise<Uint8Array> {
    const local = this.code.get(toKey(hash));
    if (local) return local;
    return this.source.code(hash);
  }

  async getCodeSize(address: Address): Promise<number> {
    return (await this.getCode(address)).length;
  }

  // ------------------------------------------------------------ storage

  async readSlot(addr: string, slot: string): Promise<Uint8Array> {
    this.onAccess?.();
    const m = this.storage.get(addr);
    if (m) {
      const v = m.get(slot);
      if (v !== undefined) return v;
    }
    if (this.cleared.has(addr)) return EMPTY_BYTES;
    return this.source.storage(addr, slot);
  }

  async getStorage(address: Address, key: Uint8Array): Promise<Uint8Array> {
    return this.readSlot(addrKey(address), toKey(key));
  }

  writeSlot(addr: string, slot: string, value: Uint8Array): void {
    let m = this.storage.get(addr);
    if (!m) {
      m = new Map();
      this.storage.set(addr, m);
    }
    this.journal.push({ k: 1, addr, slot, prev: m.get(slot) });
    m.set(slot, stripZeros(value));
  }

  async putStorage(address: Address, key: Uint8Array, value: Uint8Array): Promise<void> {
    this.writeSlot(addrKey(address), toKey(key), value);
  }

  private clearSlots(addr: string): void {
    this.journal.push({ k: 2, addr, prevSlots: this.storage.get(addr), prevCleared: this.cleared.has(addr) });
    this.storage.set(addr, new Map());
    this.cleared.add(addr);
  }

  async clearStorage(address: Address): Promise<void> {
    this.clearSlots(addrKey(address));
  }

  async dumpStorage(address: Address): Promise<StorageDump> {
    const out: StorageDump = {};
    for (const [slot, v] of this.storage.get(addrKey(address)) ?? []) out[`0x${slot}`] = toHex(v);
    return out;
  }

  // ------------------------------------------------------------ checkpoints

  async checkpoint(): Promise<void> {
    this.marks.push(this.journal.length);
  }

  async commit(): Promise<void> {
    this.marks.pop();
    if (this.marks.length === 0) this.journal.length = 0;
  }

  /** Keeps every write: drops all open checkpoints and the undo journal. */
  release(): void {
    this.marks.length = 0;
    this.journal.length = 0;
  }

  async revert(): Promise<void> {
    const mark = this.marks.pop() ?? 0;
    for (let i = this.journal.length - 1; i >= mark; i--) {
      const u = this.journal[i];
      if (u.k === 0) {
        if (u.prev === undefined) this.accounts.delete(u.addr);
        else this.accounts.set(u.addr, u.prev);
      } else if (u.k === 1) {
        const m = this.storage.get(u.addr)!;
        if (u.prev === undefined) m.delete(u.slot);
        else m.set(u.slot, u.prev);
      } else if (u.k === 2) {
        if (u.prevSlots === undefined) this.storage.delete(u.addr);
        else this.storage.set(u.addr, u.prevSlots);
        if (!u.prevCleared) this.cleared.delete(u.addr);
      } else {
        this.burned -= u.amount;
      }
    }
    this.journal.length = mark;
  }

  // ------------------------------------------------------------ unused by runTx

  async getStateRoot(): Promise<Uint8Array> {
    throw new Error('the state root is computed once per block by the executor, not per transaction');
  }
  async setStateRoot(): Promise<void> {
    throw new Error('setStateRoot is not supported: open a state view at a height instead');
  }
  async hasStateRoot(): Promise<boolean> {
    return false;
  }
  clearCaches(): void {}
  shallowCopy(): StateManagerInterface {
    return new JournaledState(this.source);
  }
}
