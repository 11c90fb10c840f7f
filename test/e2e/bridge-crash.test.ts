// Bridge in across proposer crashes, on a 4-validator network (equal power, each its own process on
// a loopback IP, all watching the same real source chain). Three times: deposits are locked and
// buried on the source chain, and right then the validator proposing the height in progress (read
// from /consensus_state) is killed with SIGKILL — the one whose block would carry the mint, or is
// already carrying it — and restarted once the other three have minted. Every node ends with each
// sequence number minted exactly once, in order (the bridge_mint events of every block's results),
// the recipients' balances, total_bridged_in equal to what was locked, the BTC totalSupply() grown by
// exactly the minted amount in each minting block and the same on every node.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Wallet } from 'ethers';
import { parse, stringify } from 'smol-toml';
import { createNetwork, heightOf, NETWORK_UP_MS, type Network, rpc, waitFor, waitHeight } from './network.js';
import {
  BTC,
  bridgeAppSection,
  bridgeMints,
  type SourceChain,
  startSourceChain,
  writeBridgeGenesis,
} from './source-chain.js';

const ROUNDS = 3;
/**
 * The network's timeout_commit. Both races of a round are won inside it: the deposits must be locked,
 * buried and read by every watcher between the start of a height and the validators' precommits of
 * it, and the proposer of the next height must be killed between node 0 entering that height and the
 * proposer's proposal. At the seed's 1 s a machine at load 30-45 lost the first race in most attempts
 * ("only 2 of 3 kills timed right", 2 of 3 runs); 3 s leaves the same checks room to pass.
 */
const TIMEOUT_COMMIT = '3s';
/** Attempts that may miss their timing (each is let mint and is still checked at the end). */
const SPARE_ATTEMPTS = 6;

async function eth(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(15_000),
  });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

/** CometBFT round step numbers: 6 is Precommit, when a validator signs its vote extension. */
const PRECOMMIT = 6;

async function consensus(url: string) {
  const rs = (await rpc(url, '/consensus_state')).round_state as {
    'height/round/step': string;
    proposer: { address: string };
  };
  const [height, round, step] = rs['height/round/step'].split('/').map(Number) as [number, number, number];
  return { height, round, step, proposer: rs.proposer.address.toUpperCase() };
}

/** The node's bridge_last_observed_sequence gauge (the last deposit its watcher read, buried). */
async function observed(ip: string): Promise<bigint> {
  const text = await fetch(`http://${ip}:26660/metrics`, { signal: AbortSignal.timeout(3000) })
    .then((r) => r.text())
    .catch(() => '');
  return BigInt(/_bridge_last_observed_sequence\{[^}]*\} (\d+)$/m.exec(text)?.[1] ?? '-1');
}

/** The BTC token precompile's totalSupply() (the native supply) at `height`. */
const supplyAt = async (url: string, height: number) =>
  BigInt(
    (await eth(url, 'eth_call', [
      { to: '0x7b7c000000000000000000000000000000000000', data: '0x18160ddd' },
      `0x${height.toString(16)}`,
    ])) as string,
  );

/** The round in which `height` was committed and its proposer (upper-case hex), from a node's store. */
async function commitOf(url: string, height: number): Promise<{ round: number; proposer: string }> {
  const b = await rpc(url, `/block?height=${height}`, 10_000);
  const c = await rpc(url, `/commit?height=${height}`, 10_000);
  return {
    proposer: (b.block as { header: { proposer_address: string } }).header.proposer_address.toUpperCase(),
    round: (c.signed_header as { commit: { round: number } }).commit.round,
  };
}

const lastSequence = async (url: string) =>
  ((await eth(url, 'bridge_params').catch(() => ({}))) as Record<string, string>).inbound_last_sequence;

describe('bridge in: the proposer of the minting block is killed', { timeout: 600_000 }, () => {
  let src: SourceChain;
  let net: Network;
  /** Validator address (upper-case hex) -> node index. */
  const byAddress = new Map<string, number>();

  before(async () => {
    src = await startSourceChain(undefined, { engine: 'anvil' });
    net = createNetwork({
      validators: 4,
      // A dead proposer costs one timeout_propose before the next round's proposer takes over.
      editConfig: (doc) => {
        doc.consensus = { ...doc.consensus, timeout_propose: '1s', timeout_commit: TIMEOUT_COMMIT };
      },
    });
    for (const n of net.nodes) {
      writeBridgeGenesis(n.home, src.tokenAddress);
      const a = join(n.home, 'config', 'app.toml');
      const app = parse(readFileSync(a, 'utf8')) as Record<string, unknown>;
      app.bridge = bridgeAppSection(src, 1, { poll_interval: '100ms' });
      writeFileSync(a, stringify(app));
      // Each node's metrics on its own IP (the default ":26660" is every interface).
      const c = join(n.home, 'config', 'config.toml');
      const config = parse(readFileSync(c, 'utf8')) as Record<string, Record<string, unknown>>;
      config.instrumentation = {
        ...config.instrumentation,
        prometheus: true,
        prometheus_listen_addr: `${n.ip}:26660`,
      };
      writeFileSync(c, stringify(config));
    }
    for (let i = 0; i < 4; i++) net.start(i);
    await waitHeight(net, [0, 1, 2, 3], 2, NETWORK_UP_MS);
    for (const n of net.nodes) {
      const st = await rpc(n.cometUrl, '/status');
      byAddress.set(String((st.validator_info as Record<string, unknown>).address).toUpperCase(), n.index);
    }
    assert.equal(byAddress.size, 4);
  });

  after(async () => {
    await net?.cleanup();
    await src?.stop();
  });

  it('mints every sequence number exactly once, in order, on every node', async (t) => {
    const expected: Array<[bigint, string, bigint]> = [];
    const kills: Array<{ victim: number; height: number; round: number; step: number; seq: bigint }> = [];
    let seq = 0n;
    const allMinted = (which: number[]) =>
      waitFor(
        `sequence ${seq} minted by nodes ${which.join(',')}`,
        async () =>
          (await Promise.all(which.map((i) => lastSequence(net.nodes[i]!.ethUrl)))).every(
            (s) => s === String(seq),
          ),
        60_000,
        net,
      );
    for (let attempt = 0; kills.length < ROUNDS; attempt++) {
      assert.ok(
        attempt < ROUNDS + SPARE_ATTEMPTS,
        `only ${kills.length} of ${ROUNDS} kills timed right in ${attempt} attempts`,
      );
      // Deposits locked and buried right after node 0 enters a height x + 1 (during its timeout_commit)
      // are read by every watcher (poll_interval 100 ms) before the precommits of that height, whose
      // vote extensions then carry them: the block of the height after it is the one that mints.
      const x = (await consensus(net.nodes[0]!.cometUrl)).height;
      await waitFor(
        `height ${x + 1}`,
        async () => (await consensus(net.nodes[0]!.cometUrl)).height > x,
        30_000,
        net,
      );
      const deposits = [0, 1].map((k) => ({
        amount: BigInt(attempt * 10 + k + 1) * BTC,
        recipient: Wallet.createRandom().address.toLowerCase(),
      }));
      await src.lockInOneBlock(deposits);
      await src.mine(1);
      for (const d of deposits) expected.push([++seq, d.recipient, d.amount]);
      await waitFor(
        `every watcher observed sequence ${seq}`,
        async () => (await Promise.all(net.nodes.map((n) => observed(n.ip)))).every((o) => o === seq),
        30_000,
        net,
      );
      // Every validator must be at one height H, still before its precommit of it, now that every
      // watcher has the deposits: each one's vote extension is made at its own precommit, so the
      // extensions of H all carry them and the block of H + 1 mints (one validator already past its
      // precommit, as in a Node 22 run, leaves H's extensions short). H is usually x + 1; on a loaded
      // machine locking and reading the deposits can take longer than a height, and any H serves.
      const states = await Promise.all(net.nodes.map((n) => consensus(n.cometUrl)));
      const at = states[0]!;
      if (states.some((s) => s.height !== at.height || s.step >= PRECOMMIT)) {
        // Too slow (a loaded machine): which height mints is not known. Let it mint, try again.
        t.diagnostic(
          `attempt ${attempt}: too slow, at ${states.map((s) => `${s.height}/${s.step}`).join(' ')}`,
        );
        await allMinted([0, 1, 2, 3]);
        continue;
      }
      // Kill the proposer of H + 1 as soon as that height starts, before it proposes.
      let rs = at;
      for (const until = Date.now() + 60_000; rs.height <= at.height; ) {
        if (Date.now() > until) throw new Error(`node 0 did not leave height ${at.height} in 60 s`);
        await new Promise((r) => setTimeout(r, 20));
        rs = await consensus(net.nodes[0]!.cometUrl);
      }
      // When H > x + 1, enough watchers may have read the deposits before their precommits of H - 1
      // for the block of H to mint them already; then H + 1 is not the minting block. Block H is
      // committed on node 0 now: if it minted, this attempt is let go like a slow one.
      let early: boolean | undefined;
      await waitFor(
        `the results of block ${at.height} on node 0`,
        async () => {
          const mints = await bridgeMints(net.nodes[0]!.cometUrl, at.height, at.height);
          early = mints.some((m) => m.sequence === seq);
          return true;
        },
        15_000,
        net,
      );
      if (early) {
        t.diagnostic(`attempt ${attempt}: the deposits were minted at ${at.height}, before the kill`);
        await allMinted([0, 1, 2, 3]);
        continue;
      }
      const victim = byAddress.get(rs.proposer);
      assert.ok(victim !== undefined, `the proposer ${rs.proposer} is one of the four`);
      await net.kill(victim);
      const survivors = [0, 1, 2, 3].filter((i) => i !== victim);
      await allMinted(survivors);
      // A kill that came after the victim's proposal of round 0 had gone out (node 0 entered the
      // height late, or its answer was slow) lets that proposal commit: the victim crashed, but not
      // before proposing. Such a round is not counted; the final checks still cover its deposits.
      const committed = await commitOf(net.nodes[survivors[0]!]!.cometUrl, rs.height);
      if (committed.round === 0 && byAddress.get(committed.proposer) === victim) {
        t.diagnostic(
          `attempt ${attempt}: node${victim} was killed after proposing ${rs.height}; not counted`,
        );
      } else {
        kills.push({ victim, height: rs.height, round: rs.round, step: rs.step, seq });
      }
      // The killed validator restarts (replaying from its own store) and catches up before the next
      // round, so that three of four are always up.
      net.start(victim);
      const h = Math.max(...(await Promise.all(survivors.map((i) => heightOf(net.nodes[i]!)))));
      // A restart is a start: at load 50 the victim took 46 s to its handshake, and missed 60 s.
      await waitHeight(net, [0, 1, 2, 3], h + 1, NETWORK_UP_MS);
      await allMinted([0, 1, 2, 3]);
    }
    // Where each round's deposits were minted: the block of the height whose round-0 proposer was
    // killed, proposed by another validator in a later round.
    const top0 = Math.min(...(await Promise.all(net.nodes.map((n) => heightOf(n)))));
    const mintedAt = new Map(
      (await bridgeMints(net.nodes[0]!.cometUrl, 1, top0)).map((m) => [m.sequence, m.height]),
    );
    for (const k of kills) {
      const h = mintedAt.get(k.seq)!;
      const b = await rpc(net.nodes[0]!.cometUrl, `/block?height=${h}`);
      const proposer = (
        b.block as { header: { proposer_address: string } }
      ).header.proposer_address.toUpperCase();
      const next = await rpc(net.nodes[0]!.cometUrl, `/commit?height=${h}`);
      const round = (next.signed_header as { commit: { round: number } }).commit.round;
      assert.equal(
        h,
        k.height,
        `sequence ${k.seq} minted in the block of height ${k.height}, whose proposer was killed`,
      );
      assert.ok(round >= 1, `height ${h} committed in round ${round}: round 0's proposer was dead`);
      assert.notEqual(byAddress.get(proposer), k.victim, `height ${h} proposed by another validator`);
    }
    const supplies = new Set<bigint>();
    const top = Math.min(...(await Promise.all(net.nodes.map((n) => heightOf(n)))));
    const total = expected.reduce((s, [, , a]) => s + a, 0n);
    for (const n of net.nodes) {
      const mints = await bridgeMints(n.cometUrl, 1, top);
      assert.deepEqual(
        mints.map((m) => [m.sequence, m.recipient, m.amount]),
        expected,
        `node${n.index}: each sequence number minted once, in order`,
      );
      for (const [, r, a] of expected)
        assert.equal(
          BigInt((await eth(n.ethUrl, 'eth_getBalance', [r, `0x${top.toString(16)}`])) as string),
          a,
        );
      const p = (await eth(n.ethUrl, 'bridge_params', [`0x${top.toString(16)}`])) as Record<string, string>;
      assert.equal(p.inbound_last_sequence, String(seq), `node${n.index}`);
      assert.equal(p.total_bridged_in, total.toString(), `node${n.index}`);
      // The BTC token's totalSupply() grows by exactly what each minting block minted.
      for (const k of kills) {
        const grew = (await supplyAt(n.ethUrl, k.height)) - (await supplyAt(n.ethUrl, k.height - 1));
        const inBlock = expected
          .filter(([s]) => s > k.seq - 2n && s <= k.seq)
          .reduce((x, [, , a]) => x + a, 0n);
        assert.equal(grew, inBlock, `node${n.index}: supply at height ${k.height}`);
      }
      supplies.add(await supplyAt(n.ethUrl, top));
    }
    assert.equal(supplies.size, 1, 'every node has the same total supply');
  });
});
