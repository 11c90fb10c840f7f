// Bridge in, measured end to end on this machine:
//   deposits  one noded validator (chain-local, timeout_commit 300 ms) and a Hardhat source chain:
//             N deposits locked in one source block; the time from that block's confirmation to
//             the last one minted on noded gives deposits per second attested and minted.
//   interval  a 4-validator `noded testnet` network (each node its own process on a loopback IP,
//             testnet timeouts), once with vote extensions off and once on from height 1 with every
//             validator's watcher reading a Hardhat source: the mean block interval over the same
//             heights (header times), i.e. the block-time cost of vote extensions.
//
// Usage: node dist/bench/bridge.js [--deposits 320] [--blocks 20] [--only deposits|interval]
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'smol-toml';
import { DEV_ADDRESSES, initLocalHome, startNode } from '../test/e2e/harness.js';
import { createNetwork, rpc, waitHeight } from '../test/e2e/network.js';
import { type SourceChain, startSourceChain } from '../test/e2e/source-chain.js';
import { arg } from './exec-fixtures.js';

const N = Number(arg('deposits', '320'));
const BLOCKS = Number(arg('blocks', '20'));
const only = arg('only', '');

function bridgeGenesis(file: string, token: string, extensions: boolean): void {
  const g = JSON.parse(readFileSync(file, 'utf8'));
  if (extensions) g.consensus_params.abci = { vote_extensions_enable_height: '1' };
  g.app_state.bridge = {
    admin: DEV_ADDRESSES[0],
    min_amount: '1000',
    window_seconds: '86400',
    max_outflow_per_window: '1000000000000000000000',
    chains: [1],
    btc_token_address: token,
  };
  writeFileSync(file, JSON.stringify(g, null, 2));
}

const bridgeToml = (src: SourceChain) => ({
  enable: true,
  ethereum_rpc_url: src.url,
  bridge_address: src.bridgeAddress,
  btc_token_address: src.tokenAddress,
  confirmations: 1,
  poll_interval: '200ms',
});

async function ethCall(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(5000),
  });
  return ((await res.json()) as { result?: unknown }).result;
}

async function deposits(): Promise<void> {
  const src = await startSourceChain();
  const { home, ports } = await initLocalHome({
    timeoutCommit: '300ms',
    extra: (_c, app) => {
      if ('evm' in app) app.bridge = bridgeToml(src);
    },
  });
  bridgeGenesis(join(home, 'config', 'genesis.json'), src.tokenAddress, true);
  const node = await startNode(home, ports);
  try {
    const recipients = Array.from({ length: N }, (_, i) => `0x${(i + 1).toString(16).padStart(40, '0')}`);
    await src.lockInOneBlock(recipients.map((r) => ({ amount: 10n ** 15n, recipient: r })));
    const h0 = Number(BigInt((await ethCall(node.ethUrl, 'eth_blockNumber')) as string));
    await src.mine(1);
    const t0 = performance.now();
    for (;;) {
      const p = (await ethCall(node.ethUrl, 'bridge_params')) as { inbound_last_sequence: string };
      if (Number(p.inbound_last_sequence) >= N) break;
      if (performance.now() - t0 > 300_000) throw new Error(`only ${p.inbound_last_sequence} of ${N} minted`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const s = (performance.now() - t0) / 1000;
    const h1 = Number(BigInt((await ethCall(node.ethUrl, 'eth_blockNumber')) as string));
    console.log(
      `deposits: ${N} in one source block minted in ${s.toFixed(2)} s after its confirmation: ${(N / s).toFixed(0)} deposits/s; ` +
        `${h1 - h0} noded blocks (at most 64 deposits per vote extension, timeout_commit 300 ms)`,
    );
  } finally {
    await node.stop();
    await src.stop();
    rmSync(home, { recursive: true, force: true });
  }
}

async function interval(extensions: boolean): Promise<number> {
  const src = extensions ? await startSourceChain() : undefined;
  const net = createNetwork({ validators: 4 });
  try {
    for (const n of net.nodes) {
      if (src) {
        bridgeGenesis(join(n.home, 'config', 'genesis.json'), src.tokenAddress, true);
        const a = join(n.home, 'config', 'app.toml');
        const app = parse(readFileSync(a, 'utf8')) as Record<string, unknown>;
        app.bridge = bridgeToml(src);
        writeFileSync(a, stringify(app));
      }
    }
    for (let i = 0; i < 4; i++) net.start(i);
    const from = 3;
    await waitHeight(net, [0, 1, 2, 3], from + BLOCKS, 60_000 + BLOCKS * 5_000);
    const time = async (h: number) => {
      const b = await rpc(net.nodes[0]!.cometUrl, `/block?height=${h}`);
      const header = (b.block as { header: { time: string } }).header;
      return Date.parse(header.time);
    };
    const ms = ((await time(from + BLOCKS)) - (await time(from))) / BLOCKS;
    console.log(
      `interval: 4 validators, vote extensions ${extensions ? 'on (watchers reading Hardhat)' : 'off'}: ` +
        `${ms.toFixed(1)} ms per block over heights ${from}..${from + BLOCKS}`,
    );
    return ms;
  } finally {
    await net.cleanup();
    await src?.stop();
  }
}

console.log(
  `load average before: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
if (only === '' || only === 'deposits') await deposits();
if (only === '' || only === 'interval') {
  const off = await interval(false);
  const on = await interval(true);
  console.log(
    `interval: extensions cost ${(on - off).toFixed(1)} ms per block (${(((on - off) / off) * 100).toFixed(1)} %)`,
  );
}
console.log(
  `load average after: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
