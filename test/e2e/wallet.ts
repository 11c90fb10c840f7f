// A chain-local node as a wallet test sees it: an ethers v6 provider on its JSON-RPC, started before
// a suite's tests and stopped (provider, process and home) after them, and the revert reason ethers
// reports for a refused call.
import { after, before } from 'node:test';
import { JsonRpcProvider } from 'ethers';
import { type HomeOptions, startLocalNode } from './harness.js';

export type LocalNode = Awaited<ReturnType<typeof startLocalNode>>;

/** A provider that skips the network probe, polls every 100 ms and caches nothing. */
export function walletProvider(url: string): JsonRpcProvider {
  return new JsonRpcProvider(url, undefined, { staticNetwork: true, pollingInterval: 100, cacheTimeout: -1 });
}

/**
 * Registers, in the calling suite, a `before` that starts a fresh chain-local node with a provider on
 * it and an `after` that stops both. Read `env` and `provider` inside tests or later hooks.
 */
export function useWalletNode(opts: HomeOptions = {}): {
  readonly env: LocalNode;
  readonly provider: JsonRpcProvider;
} {
  let env: LocalNode | undefined;
  let provider: JsonRpcProvider | undefined;
  before(async () => {
    env = await startLocalNode(opts);
    provider = walletProvider(env.node.ethUrl);
  });
  after(async () => {
    provider?.destroy();
    await env?.cleanup();
  });
  const started = <T>(v: T | undefined): T => {
    if (v === undefined)
      throw new Error('the wallet node is not started: read it inside a test or a later hook');
    return v;
  };
  return {
    get env() {
      return started(env);
    },
    get provider() {
      return started(provider);
    },
  };
}

/** The revert reason ethers reports for a failed call or estimate. */
export async function revertReason(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    const e = err as { reason?: string; shortMessage?: string };
    return e.reason ?? `no reason: ${e.shortMessage}`;
  }
  throw new Error('the call did not revert');
}
