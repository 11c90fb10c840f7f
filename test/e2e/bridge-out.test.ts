// The bridge-out precompile (0x7b7c…0012) through a real chain-local node whose genesis carries
// app_state.bridge, with ethers: bridgeOut burns BTC (the token's totalSupply drops by it) and
// records entries with sequence numbers 1, 2, 3; the entries read back over JSON-RPC and REST by
// sequence and by recipient, also after a restart; every refusal (minimum, window limit, token,
// chain, recipient, balance, value, pause by a non-admin) reverts with its reason and changes nothing;
// the admin's pause switch stops and restarts it.
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  Contract,
  type ContractTransactionReceipt,
  Interface,
  JsonRpcProvider,
  parseEther,
  Wallet,
} from 'ethers';
import { BTC, compileBtcContracts, contractSource } from '../btc-token.js';
import { compileSolidity } from '../solc.js';
import { DEV_ADDRESSES, DEV_KEYS, initLocalHome, jsonRpc, type RunningNode, startNode } from './harness.js';
import { revertReason as reasonOf } from './wallet.js';

const rpc = (node: RunningNode, method: string, params: unknown[]) => jsonRpc(node.ethUrl, method, params);

const BRIDGE = '0x7B7C000000000000000000000000000000000012';
const bridgeAbi = compileSolidity({ 'IBridgeOut.sol': contractSource('IBridgeOut.sol') }, 'cancun').IBridgeOut
  .abi;
const btcAbi = compileBtcContracts().IBTC.abi;
const MIN = parseEther('0.001');
const LIMIT = parseEther('5');
const ADMIN = 3;

async function rest(
  node: RunningNode,
  path: string,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${node.apiUrl}${path}`, { signal: AbortSignal.timeout(10_000) });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe('bridge-out precompile against noded chain-local', { timeout: 420_000 }, () => {
  let home: string;
  let ports: Awaited<ReturnType<typeof initLocalHome>>['ports'];
  let node: RunningNode;
  let provider: JsonRpcProvider;
  const recipientA = '0x1111111111111111111111111111111111111111';
  const recipientB = `0x${'ab'.repeat(40)}`; // 40 bytes, e.g. a script on a non-EVM chain

  before(async () => {
    ({ home, ports } = await initLocalHome());
    const file = join(home, 'config', 'genesis.json');
    const genesis = JSON.parse(readFileSync(file, 'utf8'));
    genesis.app_state.bridge = {
      admin: DEV_ADDRESSES[ADMIN],
      min_amount: MIN.toString(),
      window_seconds: '86400',
      max_outflow_per_window: LIMIT.toString(),
      chains: [1, 7],
    };
    writeFileSync(file, JSON.stringify(genesis, null, 2));
    node = await startNode(home, ports);
    provider = new JsonRpcProvider(node.ethUrl, undefined, {
      staticNetwork: true,
      pollingInterval: 100,
      cacheTimeout: -1,
    });
  });

  after(async () => {
    provider?.destroy();
    await node?.stop();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  const bridgeAs = (i: number) => new Contract(BRIDGE, bridgeAbi as never, new Wallet(DEV_KEYS[i], provider));
  const btc = () => new Contract(BTC, btcAbi as never, provider);

  it('bridgeOut burns BTC, numbers the entries 1, 2, 3 and logs BridgeOut', async () => {
    const b = bridgeAs(0);
    const sender = DEV_ADDRESSES[0];
    assert.notEqual(await provider.getCode(BRIDGE), '0x');
    assert.equal(await b.outboundCount(), 0n);
    const supply0 = await btc().totalSupply();
    const bal0 = await provider.getBalance(sender);
    const rc: ContractTransactionReceipt = await (
      await b.bridgeOut(BTC, parseEther('1'), 1, recipientA)
    ).wait();
    assert.equal(rc.status, 1);
    const fee: bigint = rc.gasUsed * rc.gasPrice;
    assert.equal(await provider.getBalance(sender), bal0 - parseEther('1') - fee);
    assert.equal(await btc().totalSupply(), supply0 - parseEther('1'), 'the burn leaves the supply');
    const ev = b.interface.parseLog(rc.logs[0])!;
    assert.equal(ev.name, 'BridgeOut');
    assert.deepEqual(
      [ev.args.sequence, ev.args.sender, ev.args.chain, ev.args.token, ev.args.amount, ev.args.recipient],
      [1n, sender, 1n, BTC, parseEther('1'), recipientA],
    );
    await (await b.bridgeOut(BTC, parseEther('0.5'), 7, recipientB)).wait();
    await (await bridgeAs(1).bridgeOut(BTC, MIN, 1, recipientA)).wait();
    assert.equal(await b.outboundCount(), 3n);
    assert.equal(await btc().totalSupply(), supply0 - parseEther('1.5') - MIN);
    const logs = await provider.getLogs({ address: BRIDGE, fromBlock: 0, toBlock: 'latest' });
    assert.deepEqual(
      logs.map((l) => BigInt(l.topics[1])),
      [1n, 2n, 3n],
    );
  });

  it('entries read over JSON-RPC and REST, by sequence and by recipient', async () => {
    const one = await rpc(node, 'bridge_getOutbound', ['0x1']);
    assert.deepEqual(one.result, {
      sequence: '1',
      sender: DEV_ADDRESSES[0].toLowerCase(),
      token: BTC.toLowerCase(),
      amount: parseEther('1').toString(),
      chain: 1,
      recipient: recipientA,
      blockNumber: (one.result as { blockNumber: string }).blockNumber,
      timestamp: (one.result as { timestamp: string }).timestamp,
    });
    const block = await provider.getBlock(Number((one.result as { blockNumber: string }).blockNumber));
    assert.equal((one.result as { timestamp: string }).timestamp, String(block!.timestamp));
    assert.equal((await rpc(node, 'bridge_getOutbound', [4])).result, null);
    assert.equal((await rpc(node, 'bridge_getOutbound', [0])).result, null);
    const byA = (await rpc(node, 'bridge_getOutboundByRecipient', [recipientA])).result as Array<{
      sequence: string;
      sender: string;
    }>;
    assert.deepEqual(
      byA.map((e) => [e.sequence, e.sender]),
      [
        ['1', DEV_ADDRESSES[0].toLowerCase()],
        ['3', DEV_ADDRESSES[1].toLowerCase()],
      ],
    );
    const byB = (await rpc(node, 'bridge_getOutboundByRecipient', [recipientB])).result as Array<{
      recipient: string;
      chain: number;
    }>;
    assert.deepEqual(
      byB.map((e) => [e.recipient, e.chain]),
      [[recipientB, 7]],
    );
    assert.deepEqual((await rpc(node, 'bridge_getOutboundByRecipient', ['0x22'])).result, []);
    const bad = await rpc(node, 'bridge_getOutboundByRecipient', ['0x']);
    assert.equal(bad.error?.code, -32602);
    assert.equal(
      bad.error?.message,
      'recipient must be 1 to 64 bytes (its bytes on the destination chain), got 0',
    );

    const r2 = await rest(node, '/noded/bridge/v1/outbound/2');
    assert.equal(r2.status, 200);
    assert.deepEqual(
      (r2.json.entry as { amount: string; recipient: string }).amount,
      parseEther('0.5').toString(),
    );
    assert.equal((r2.json.entry as { recipient: string }).recipient, recipientB);
    const missing = await rest(node, '/noded/bridge/v1/outbound/9');
    assert.equal(missing.status, 404);
    assert.equal(missing.json.message, 'outbound entry 9 not found');
    assert.equal((await rest(node, '/noded/bridge/v1/outbound/x')).status, 400);
    const list = await rest(node, `/noded/bridge/v1/outbound?recipient=${recipientA}`);
    assert.deepEqual(
      (list.json.entries as Array<{ sequence: string }>).map((e) => e.sequence),
      ['1', '3'],
    );
    assert.equal((await rest(node, '/noded/bridge/v1/outbound?recipient=0xzz')).status, 400);
    const params = (await rest(node, '/noded/bridge/v1/params')).json.params as Record<string, unknown>;
    assert.deepEqual(
      { ...params, window_start: undefined, inbound_window_start: undefined },
      {
        admin: DEV_ADDRESSES[ADMIN].toLowerCase(),
        paused: false,
        min_amount: MIN.toString(),
        window_seconds: '86400',
        max_outflow_per_window: LIMIT.toString(),
        chains: [1, 7],
        window_start: undefined,
        window_outflow: (parseEther('1.5') + MIN).toString(),
        total_bridged_out: (parseEther('1.5') + MIN).toString(),
        outbound_count: '3',
        inbound_last_sequence: '0',
        total_bridged_in: '0',
        inbound_token: null,
        max_inflow_per_window: null,
        inbound_window_start: undefined,
        inbound_window_inflow: '0',
        max_deposit_amount: null,
        over_cap_deposits: '0',
        over_cap_amount: '0',
      },
    );
    assert.equal(params.inbound_window_start, params.window_start, 'the same windows both ways');
    assert.deepEqual((await rpc(node, 'bridge_params', [])).result, params);
  });

  it('refusals revert with their reason and change nothing', async () => {
    const b = bridgeAs(0);
    const from = DEV_ADDRESSES[0].toLowerCase();
    const used = parseEther('1.5') + MIN;
    const supply = await btc().totalSupply();
    assert.equal(
      await reasonOf(b.bridgeOut.staticCall(BTC, MIN - 1n, 1, recipientA)),
      `bridge: amount ${MIN - 1n} is below the minimum ${MIN}`,
    );
    assert.match(
      await reasonOf(b.bridgeOut.staticCall(BTC, LIMIT, 1, recipientA)),
      new RegExp(
        `^bridge: amount ${LIMIT} would bring the outflow of this 86400-second window \\(from \\d+\\) to ${LIMIT + used}, above the limit ${LIMIT}$`,
      ),
    );
    assert.equal(
      await reasonOf(b.bridgeOut.staticCall(recipientA, MIN, 1, recipientA)),
      `bridge: token ${recipientA} cannot be bridged out (only BTC, ${BTC.toLowerCase()})`,
    );
    assert.equal(
      await reasonOf(b.bridgeOut.staticCall(BTC, MIN, 2, recipientA)),
      'bridge: destination chain 2 is not one of the genesis app_state.bridge.chains',
    );
    assert.equal(
      await reasonOf(b.bridgeOut.staticCall(BTC, MIN, 1, '0x')),
      'bridge: recipient is 0 bytes, want 1 to 64',
    );
    assert.equal(
      await reasonOf(b.bridgeOut.staticCall(BTC, MIN, 1, `0x${'01'.repeat(65)}`)),
      'bridge: recipient is 65 bytes, want 1 to 64',
    );
    const poor = new Contract(BRIDGE, bridgeAbi as never, Wallet.createRandom().connect(provider));
    assert.match(
      await reasonOf(poor.bridgeOut.staticCall(BTC, MIN, 1, recipientA)),
      /^bridge: amount 1000000000000000 exceeds the balance 0 of 0x/,
    );
    const iface = new Interface(bridgeAbi as never);
    const data = iface.encodeFunctionData('bridgeOut', [BTC, MIN, 1, recipientA]);
    assert.equal(
      await reasonOf(provider.call({ from, to: BRIDGE, data, value: 1n })),
      'bridge: bridgeOut(address,uint256,uint8,bytes) is not payable (1 sent)',
    );
    // Mined and refused: status 0, no entry, no burn.
    const tx = await b.bridgeOut(BTC, MIN - 1n, 1, recipientA, { gasLimit: 200_000n });
    await assert.rejects(tx.wait(), /CALL_EXCEPTION|transaction execution reverted/);
    assert.equal(await b.outboundCount(), 3n);
    assert.equal(await btc().totalSupply(), supply);
  });

  it('only the admin pauses; paused, bridgeOut refuses; unpaused, it works again', async () => {
    assert.equal(
      await reasonOf(bridgeAs(0).setPaused.staticCall(true)),
      `bridge: only the admin ${DEV_ADDRESSES[ADMIN].toLowerCase()} may pause, not ${DEV_ADDRESSES[0].toLowerCase()}`,
    );
    const admin = bridgeAs(ADMIN);
    const rc = await (await admin.setPaused(true)).wait();
    assert.equal(admin.interface.parseLog(rc.logs[0])!.name, 'PauseChanged');
    assert.equal(await admin.paused(), true);
    assert.equal(
      await reasonOf(bridgeAs(0).bridgeOut.staticCall(BTC, MIN, 1, recipientA)),
      'bridge: bridge-out is paused by the admin',
    );
    await (await admin.setPaused(false)).wait();
    assert.equal(await admin.paused(), false);
    const ok = await (await bridgeAs(0).bridgeOut(BTC, MIN, 7, recipientA)).wait();
    assert.equal(ok.status, 1);
    assert.equal(await bridgeAs(0).outboundCount(), 4n);
  });

  it('entries survive a restart of the node', async () => {
    const before = (await rpc(node, 'bridge_getOutboundByRecipient', [recipientA])).result;
    assert.equal((before as unknown[]).length, 3);
    await node.stop();
    node = await startNode(home, ports);
    assert.deepEqual((await rpc(node, 'bridge_getOutboundByRecipient', [recipientA])).result, before);
    assert.equal(
      ((await rpc(node, 'bridge_getOutbound', ['0x4'])).result as { sequence: string }).sequence,
      '4',
    );
  });
});
