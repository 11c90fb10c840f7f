// The application's abci_query paths (docs/rpc-cometbft.md): one implementation, answered by the
// Executor wherever it runs — in `noded start`'s process, or behind noded.abci.v1.Application/Query
// in the cluster's executor service — so both give the same values, heights and errors.
import type { AppQueryRequest, AppQueryResult, Hex } from '@noded/types';

/** The committed-state reads the queries use (the Executor implements them). */
export interface QueryableState {
  latestHeight(): bigint;
  getBalance(address: Hex, height: bigint): Promise<bigint>;
  getNonce(address: Hex, height: bigint): Promise<bigint>;
  getCode(address: Hex, height: bigint): Promise<Hex>;
  getStorageAt(address: Hex, slot: Hex, height: bigint): Promise<Hex>;
}

const encoder = new TextEncoder();
const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/;
const SLOT_RE = /^0x[0-9a-fA-F]{1,64}$/;

/**
 * /evm/balance/<0xaddr>, /evm/nonce/<0xaddr>, /evm/code/<0xaddr> and /evm/storage/<0xaddr>/<0xslot>,
 * answered from the state at `height` (0 or less = latest) as decimal or 0x-hex text in `value`,
 * with the path as `key`. Anything else, or a read that fails (a pruned or future height), is code 1
 * with the reason in `log`. `data` and `prove` are not used by these paths.
 */
export async function abciQuery(state: QueryableState, req: AppQueryRequest): Promise<AppQueryResult> {
  const { path, height } = req;
  const at = height > 0 ? BigInt(height) : state.latestHeight();
  const fail = (log: string): AppQueryResult => ({
    code: 1,
    log,
    key: new Uint8Array(),
    value: new Uint8Array(),
    height: Number(at),
  });
  const parts = path.split('/').filter((p) => p !== '');
  if (parts[0] !== 'evm' || parts.length < 3) {
    return fail(
      `unknown query path ${JSON.stringify(path)}: use /evm/{balance,nonce,code}/<0xaddress> or /evm/storage/<0xaddress>/<0xslot>`,
    );
  }
  const [, what, address, slot] = parts;
  if (!ADDRESS_RE.test(address!))
    return fail(`invalid address ${JSON.stringify(address)}: must be 0x followed by 40 hex digits`);
  const addr = address!.toLowerCase() as Hex;
  try {
    let value: string;
    if (what === 'balance' && parts.length === 3) value = (await state.getBalance(addr, at)).toString();
    else if (what === 'nonce' && parts.length === 3) value = (await state.getNonce(addr, at)).toString();
    else if (what === 'code' && parts.length === 3) value = await state.getCode(addr, at);
    else if (what === 'storage' && parts.length === 4 && SLOT_RE.test(slot!))
      value = await state.getStorageAt(addr, slot as Hex, at);
    else return fail(`unknown query path ${JSON.stringify(path)}`);
    return { code: 0, log: '', key: encoder.encode(path), value: encoder.encode(value), height: Number(at) };
  } catch (err) {
    return fail((err as Error).message);
  }
}
