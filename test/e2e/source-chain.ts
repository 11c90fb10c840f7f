// A real source chain for the bridge tests: `hardhat node` on 127.0.0.1 (from a throwaway project
// under <repo>/.tmp, as bench/targets.ts starts it) with the wrapped-BTC TestToken and
// contracts/BTCBridgeSource.sol deployed by its first account. Deployment is deterministic (same
// deployer, same nonces), so a Hardhat restarted on the same port has the contracts at the same
// addresses.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { Contract, ContractFactory, JsonRpcProvider, type JsonRpcSigner } from 'ethers';
import { contractSource } from '../btc-token.js';
import { compileSolidity } from '../solc.js';
import { TOKEN_SOURCE } from './contracts.js';
import { freePort, repoRoot } from './harness.js';

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
  stop(): Promise<void>;
}

/**
 * Starts Hardhat (on `port`, else a free one) and deploys the token and the bridge (with
 * `maxLock`, default 0: no per-lock cap).
 */
export async function startSourceChain(port?: number, opts: { maxLock?: bigint } = {}): Promise<SourceChain> {
  const root = repoRoot();
  mkdirSync(join(root, '.tmp'), { recursive: true });
  const project = mkdtempSync(join(root, '.tmp', 'bridge-source-'));
  writeFileSync(join(project, 'package.json'), '{"name":"bridge-source","private":true}\n');
  writeFileSync(
    join(project, 'hardhat.config.cjs'),
    'module.exports = { networks: { hardhat: { chainId: 31337 } } };\n',
  );
  const p = port ?? (await freePort());
  const cli = join(root, 'node_modules', 'hardhat', 'internal', 'cli', 'cli.js');
  const proc: ChildProcess = spawn(
    process.execPath,
    [cli, 'node', '--hostname', '127.0.0.1', '--port', String(p)],
    {
      cwd: project,
      env: { ...process.env, HARDHAT_DISABLE_TELEMETRY_PROMPT: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => {
    out = (out + d.toString()).slice(-8000);
  });
  proc.stderr?.on('data', (d: Buffer) => {
    out = (out + d.toString()).slice(-8000);
  });
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    }
    rmSync(project, { recursive: true, force: true });
  };
  const url = `http://127.0.0.1:${p}`;
  const provider = new JsonRpcProvider(url, undefined, {
    staticNetwork: true,
    cacheTimeout: -1,
    pollingInterval: 50,
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await provider.send('eth_chainId', [])) === '0x7a69') break;
    } catch {
      // not listening yet
    }
    if (proc.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`hardhat node did not start on ${url}: ${out}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  // From here a failure (Hardhat overloaded, a deployment refused) must not leave Hardhat running.
  try {
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
        await provider.send('hardhat_mine', [`0x${n.toString(16)}`]);
      },
      async head() {
        return BigInt(await provider.send('eth_blockNumber', []));
      },
      async stop() {
        provider.destroy();
        await stop();
      },
    };
    return chain;
  } catch (err) {
    provider.destroy();
    await stop();
    throw new Error(
      `deploying the bridge contracts to hardhat on ${url} failed: ${(err as Error).message}\n${out}`,
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
