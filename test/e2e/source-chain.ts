// A real source chain for the bridge tests: `hardhat node` (or anvil, which can keep its state across
// a restart) on 127.0.0.1 (from a throwaway project under <repo>/.tmp, as bench/targets.ts starts it) with the wrapped-BTC TestToken and
// contracts/BTCBridgeSource.sol deployed by its first account. Deployment is deterministic (same
// deployer, same nonces), so a Hardhat restarted on the same port has the contracts at the same
// addresses.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { Contract, ContractFactory, JsonRpcProvider, type JsonRpcSigner } from 'ethers';
import { contractSource } from '../btc-token.js';
import { compileSolidity } from '../solc.js';
import { TOKEN_SOURCE } from './contracts.js';
import { DEV_ADDRESSES, freePort, initLocalHome, repoRoot } from './harness.js';

const compiled = () =>
  compileSolidity(
    { 'BTCBridgeSource.sol': contractSource('BTCBridgeSource.sol'), 'TestToken.sol': TOKEN_SOURCE },
    'cancun',
  );

export interface SourceChain {
  url: string;
  port: number;
  provider: JsonRpcProvider;
  deployer: JsonRpcSigner;
  token: Contract;
  bridge: Contract;
  tokenAddress: string;
  bridgeAddress: string;
  /** Locks `amount` for `recipient` (one transaction, one block with automine). */
  lock(amount: bigint, recipient: string): Promise<void>;
  /** Locks every deposit in ONE source block. */
  lockInOneBlock(deposits: Array<{ amount: bigint; recipient: string }>): Promise<bigint>;
  /** Mines `n` empty blocks (confirmations). */
  mine(n: number): Promise<void>;
  head(): Promise<bigint>;
  /** Stops the process and keeps its directory (anvil: its state file) for `restart()`. */
  halt(): Promise<void>;
  /** anvil only: starts it again on the same port from the state it wrote when halted. */
  restart(): Promise<void>;
  /** Stops the process and removes its directory. */
  stop(): Promise<void>;
}

/** The source-chain process: Hardhat (no state across a restart) or anvil with a state file. */
interface SourceProcess {
  proc: ChildProcess;
  output(): string;
  /** Stops the process (SIGINT for anvil, so that it writes its state file on the way out). */
  stop(): Promise<void>;
}

/** anvil from npm's @foundry-rs/anvil, installed into .tmp/anvil by scripts/test-deps.sh. */
export const ANVIL = join(
  repoRoot(),
  '.tmp',
  'anvil',
  'node_modules',
  '@foundry-rs',
  'anvil-linux-amd64',
  'bin',
  'anvil',
);

function spawnSource(
  engine: 'hardhat' | 'anvil',
  port: number,
  dir: string,
  stateFile: string | undefined,
): SourceProcess {
  let proc: ChildProcess;
  if (engine === 'anvil') {
    if (!existsSync(ANVIL))
      throw new Error(`anvil is not installed at ${ANVIL}: run scripts/test-deps.sh (make test does)`);
    // --state loads the file when it exists and writes it when anvil exits; --preserve-historical-states
    // keeps the state of each block, not only the head, so that calls at older blocks still answer.
    const args = ['--host', '127.0.0.1', '--port', String(port), '--chain-id', '31337', '--silent'];
    if (stateFile) args.push('--state', stateFile, '--preserve-historical-states');
    proc = spawn(ANVIL, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  } else {
    const cli = join(repoRoot(), 'node_modules', 'hardhat', 'internal', 'cli', 'cli.js');
    proc = spawn(process.execPath, [cli, 'node', '--hostname', '127.0.0.1', '--port', String(port)], {
      cwd: dir,
      env: { ...process.env, HARDHAT_DISABLE_TELEMETRY_PROMPT: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  }
  let out = '';
  const keep = (d: Buffer) => {
    out = (out + d.toString()).slice(-8000);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  return {
    proc,
    output: () => out,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
      proc.kill(engine === 'anvil' ? 'SIGINT' : 'SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    },
  };
}

async function waitReady(provider: JsonRpcProvider, sp: SourceProcess, url: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await provider.send('eth_chainId', [])) === '0x7a69') return;
    } catch {
      // not listening yet
    }
    if (sp.proc.exitCode !== null || Date.now() > deadline)
      throw new Error(`the source chain did not start on ${url}: ${sp.output()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Starts the source chain (on `port`, else a free one) and deploys the token and the bridge (with
 * `maxLock`, default 0: no per-lock cap). `engine` "anvil" runs anvil with its state in a file of a
 * temporary directory, and the returned chain can then `restart()` from that state.
 */
export async function startSourceChain(
  port?: number,
  opts: { maxLock?: bigint; engine?: 'hardhat' | 'anvil' } = {},
): Promise<SourceChain> {
  // On a loaded machine a keep-alive connection to the Hardhat node can be closed by the server as the
  // client reuses it (`socket hang up`, seen once in a run at load average 22): a connection reset
  // while deploying starts a fresh source chain once more; any other failure is reported at once.
  try {
    return await startSourceChainOnce(port, opts);
  } catch (err) {
    if (!/socket hang up|ECONNRESET/.test((err as Error).message)) throw err;
    return startSourceChainOnce(port, opts);
  }
}

async function startSourceChainOnce(
  port: number | undefined,
  opts: { maxLock?: bigint; engine?: 'hardhat' | 'anvil' },
): Promise<SourceChain> {
  const engine = opts.engine ?? 'hardhat';
  const root = repoRoot();
  mkdirSync(join(root, '.tmp'), { recursive: true });
  const project = mkdtempSync(join(root, '.tmp', 'bridge-source-'));
  writeFileSync(join(project, 'package.json'), '{"name":"bridge-source","private":true}\n');
  writeFileSync(
    join(project, 'hardhat.config.cjs'),
    'module.exports = { networks: { hardhat: { chainId: 31337 } } };\n',
  );
  const stateFile = engine === 'anvil' ? join(project, 'anvil-state.json') : undefined;
  const p = port ?? (await freePort());
  let sp = spawnSource(engine, p, project, stateFile);
  const url = `http://127.0.0.1:${p}`;
  const provider = new JsonRpcProvider(url, undefined, {
    staticNetwork: true,
    cacheTimeout: -1,
    pollingInterval: 50,
  });
  const stop = async () => {
    provider.destroy();
    await sp.stop();
    rmSync(project, { recursive: true, force: true });
  };
  // From here a failure (the chain overloaded, a deployment refused) must not leave it running.
  try {
    await waitReady(provider, sp, url);
    const c = compiled();
    const deployer = await provider.getSigner(0);
    const tokenF = new ContractFactory(c.TestToken.abi as never[], c.TestToken.bytecode, deployer);
    const token = (await (
      await tokenF.deploy('Wrapped BTC', 'WBTC', 10n ** 30n)
    ).waitForDeployment()) as Contract;
    const bridgeF = new ContractFactory(
      c.BTCBridgeSource.abi as never[],
      c.BTCBridgeSource.bytecode,
      deployer,
    );
    const bridge = (await (
      await bridgeF.deploy(await token.getAddress(), await deployer.getAddress(), opts.maxLock ?? 0n)
    ).waitForDeployment()) as Contract;
    const bridgeAddress = (await bridge.getAddress()).toLowerCase();
    await (await (token.connect(deployer) as Contract).approve(bridgeAddress, 2n ** 255n)).wait();
    const chain: SourceChain = {
      url,
      port: p,
      provider,
      deployer,
      token,
      bridge,
      tokenAddress: (await token.getAddress()).toLowerCase(),
      bridgeAddress,
      async lock(amount, recipient) {
        await (await (bridge.connect(deployer) as Contract).lock(amount, recipient)).wait();
      },
      async lockInOneBlock(deposits) {
        await provider.send('evm_setAutomine', [false]);
        try {
          const b = bridge.connect(deployer) as Contract;
          let nonce = await provider.getTransactionCount(await deployer.getAddress(), 'pending');
          for (const d of deposits)
            await b.lock(d.amount, d.recipient, { nonce: nonce++, gasLimit: 200_000 });
          await provider.send('evm_mine', []);
        } finally {
          await provider.send('evm_setAutomine', [true]);
        }
        return BigInt(await provider.send('eth_blockNumber', []));
      },
      async mine(n) {
        await provider.send(engine === 'anvil' ? 'anvil_mine' : 'hardhat_mine', [`0x${n.toString(16)}`]);
      },
      async head() {
        return BigInt(await provider.send('eth_blockNumber', []));
      },
      async halt() {
        await sp.stop();
      },
      async restart() {
        if (engine !== 'anvil') throw new Error('only an anvil source chain restarts with its state');
        if (sp.proc.exitCode === null && sp.proc.signalCode === null)
          throw new Error('the source chain is running; halt() it first');
        sp = spawnSource(engine, p, project, stateFile);
        await waitReady(provider, sp, url);
      },
      stop,
    };
    return chain;
  } catch (err) {
    const out = sp.output();
    await stop();
    throw new Error(
      `deploying the bridge contracts to ${engine} on ${url} failed: ${(err as Error).message}\n${out}`,
    );
  }
}

/** A JSON-RPC proxy in front of the source chain that records each eth_getLogs range asked. */
export async function countingProxy(target: string): Promise<{
  url: string;
  ranges: Array<[bigint, bigint]>;
  close(): void;
}> {
  const ranges: Array<[bigint, bigint]> = [];
  const port = await freePort();
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', async () => {
      const call = JSON.parse(body) as {
        method: string;
        params: Array<{ fromBlock: string; toBlock: string }>;
      };
      if (call.method === 'eth_getLogs')
        ranges.push([BigInt(call.params[0]!.fromBlock), BigInt(call.params[0]!.toBlock)]);
      try {
        const up = await fetch(target, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        });
        res.writeHead(up.status, { 'content-type': 'application/json' });
        res.end(await up.text());
      } catch {
        res.writeHead(502);
        res.end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${port}`,
    ranges,
    close: () => {
      server.close();
      server.closeAllConnections();
    },
  };
}

export interface BridgeMint {
  height: number;
  sequence: bigint;
  recipient: string;
  amount: bigint;
}

/**
 * Every `bridge_mint` event in the CometBFT block results of heights `from`..`to` of the node at
 * `cometUrl`, in block and transaction order: what the chain actually minted, height by height.
 */
export async function bridgeMints(cometUrl: string, from: number, to: number): Promise<BridgeMint[]> {
  const mints: BridgeMint[] = [];
  for (let h = from; h <= to; h++) {
    const res = await fetch(`${cometUrl}/block_results?height=${h}`, { signal: AbortSignal.timeout(15_000) });
    const body = (await res.json()) as {
      result?: {
        txs_results: Array<{
          events?: Array<{ type: string; attributes: Array<{ key: string; value: string }> }>;
        }> | null;
      };
      error?: unknown;
    };
    if (!body.result)
      throw new Error(`block_results at ${h} from ${cometUrl}: ${JSON.stringify(body.error)}`);
    for (const tx of body.result.txs_results ?? [])
      for (const e of tx.events ?? []) {
        if (e.type !== 'bridge_mint') continue;
        const a = Object.fromEntries(e.attributes.map((x) => [x.key, x.value]));
        mints.push({
          height: h,
          sequence: BigInt(a.sequence!),
          recipient: String(a.recipient).toLowerCase(),
          amount: BigInt(a.amount!),
        });
      }
  }
  return mints;
}

/** One BTC in base units: the BTC token and native balances both have 18 decimals. */
export const BTC = 10n ** 18n;

/**
 * app.toml's `[bridge]` section for a node reading `src` (`url` in place of src.url, e.g. a proxy in
 * front of it, or another chain at the same addresses), `confirmations` deep; `more` adds keys.
 */
export function bridgeAppSection(
  src: Pick<SourceChain, 'url' | 'bridgeAddress' | 'tokenAddress'>,
  confirmations: number,
  more: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    enable: true,
    ethereum_rpc_url: src.url,
    bridge_address: src.bridgeAddress,
    btc_token_address: src.tokenAddress,
    confirmations,
    poll_interval: '200ms',
    ...more,
  };
}

/**
 * Turns on vote extensions from height 1 in `home`'s genesis.json and writes its bridge parameters:
 * dev account #0 the admin, source chain 1, the token at `tokenAddress`; `more` adds to them (e.g.
 * max_deposit_amount, max_inflow_per_window).
 */
export function writeBridgeGenesis(
  home: string,
  tokenAddress: string,
  more: Record<string, string> = {},
): void {
  const file = join(home, 'config', 'genesis.json');
  const genesis = JSON.parse(readFileSync(file, 'utf8'));
  genesis.consensus_params.abci = { vote_extensions_enable_height: '1' };
  genesis.app_state.bridge = {
    admin: DEV_ADDRESSES[0],
    min_amount: '1000',
    window_seconds: '86400',
    max_outflow_per_window: (1000n * BTC).toString(),
    chains: [1],
    btc_token_address: tokenAddress,
    ...more,
  };
  writeFileSync(file, JSON.stringify(genesis, null, 2));
}

/**
 * A chain-local home whose bridge reads `src` (bridgeAppSection, polled every 200 ms) with the genesis
 * of writeBridgeGenesis (`more` adds to its parameters).
 */
export async function initBridgeHome(
  src: SourceChain,
  confirmations: number,
  more: Record<string, string> = {},
): Promise<Awaited<ReturnType<typeof initLocalHome>>> {
  const init = await initLocalHome({
    timeoutCommit: '300ms',
    extra: (_config, app) => {
      if ('evm' in app) app.bridge = bridgeAppSection(src, confirmations);
    },
  });
  writeBridgeGenesis(init.home, src.tokenAddress, more);
  return init;
}
