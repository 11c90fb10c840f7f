// Whether a home runs the dev-chain controls (anvil_setBalance & co., docs/json-rpc.md "Dev-chain
// methods"): decided once, here, for `noded start` and for the cluster's executor service.
import { loadValidatorKey } from '@noded/config';

/**
 * The dev-chain methods need a node that proposes every block: the dev chain (`devChainId`,
 * @noded/execution's DEV_CHAIN_ID) with a single validator, whose key this home holds.
 */
export function hasDevControls(
  genesis: { chainId: string; validators: Array<{ pubKey: Uint8Array }> },
  keyFile: string,
  devChainId: string,
): boolean {
  if (genesis.chainId !== devChainId || genesis.validators.length !== 1) return false;
  try {
    const key = loadValidatorKey(keyFile);
    return Buffer.from(key.publicKey).equals(Buffer.from(genesis.validators[0]!.pubKey));
  } catch {
    return false;
  }
}
