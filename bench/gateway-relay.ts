// `node dist/bench/gateway-relay.js [frames] [bytes]` (after `npm run build`): what the p2p-gateway's
// relay costs. A peer's P2PHost sends `frames` frames of `bytes` bytes on one channel, once straight
// to a P2PHost channel (what `noded start` does) and once to a gateway's host whose GatewayRelay
// forwards them over gRPC to a GatewayHost (what the consensus service receives); each mode runs
// twice, alternating, all in this process on 127.0.0.1, with the load average printed beside (the
// figures move with it). A sender past the host's 64 MiB send buffer is disconnected, so keep
// frames x bytes under that.
//
// With `--traced` it compares the relay with tracing off and on instead (docs/cluster.md "Tracing"):
// the Node SDK with a batch span processor whose exporter drops the batches, so the figure is the
// spans' own cost (the gateway's `relay in` and consensus' `deliver` span per frame), as CPU time of
// this process per frame (wall times move with the machine's load; CPU time much less).
import { loadavg } from 'node:os';
import { GatewayHost, GatewayRelay, serveGateway } from '@noded/abci-grpc';
import { ed25519Generate, nodeIdFromPublicKey } from '@noded/crypto';
import { P2P_PROTOCOL_VERSION, P2PHost, type PeerAddress } from '@noded/p2p';
import { setTracingEnabled } from '@noded/telemetry';
import { silentLogger } from '@noded/types';
import { startDroppingSdk } from './dropping-sdk.js';

const CHANNEL = '/bench/relay/1';

function host(key: ReturnType<typeof ed25519Generate>, peers: PeerAddress[] = []): P2PHost {
  const id = nodeIdFromPublicKey(key.publicKey);
  return new P2PHost({
    nodeKey: { seed: key.seed, publicKey: key.publicKey },
    nodeInfo: {
      protocolVersion: { p2p: P2P_PROTOCOL_VERSION, block: 11, app: 0 },
      id,
      listenAddr: '127.0.0.1:0',
      network: 'chain-local',
      version: 'bench',
      moniker: 'bench',
      other: { txIndex: 'off', rpcAddress: '' },
    },
    listen: { host: '127.0.0.1', port: 0 },
    persistentPeers: peers,
    unconditionalPeerIds: [],
    maxInboundPeers: 10,
    maxOutboundPeers: 10,
    handshakeTimeoutMs: 3000,
    dialTimeoutMs: 2000,
    maxRedialDelayMs: 300,
    logger: silentLogger,
  });
}

async function until(what: string, cond: () => boolean, ms = 120_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`gateway-relay bench: ${what} not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

async function run(
  mode: 'direct' | 'relay',
  frames: number,
  bytes: number,
): Promise<{ ms: number; cpuUsPerFrame: number }> {
  const gatewayKey = ed25519Generate();
  const gatewayId = nodeIdFromPublicKey(gatewayKey.publicKey);
  let got = 0;
  const channel = { protocol: CHANNEL, maxMessageBytes: 1 << 20, onMessage: () => void got++ };
  let receiver: P2PHost | undefined;
  let port = 0;
  let remote: GatewayHost | undefined;
  let server: Awaited<ReturnType<typeof serveGateway>> | undefined;
  if (mode === 'direct') {
    receiver = host(gatewayKey);
    receiver.register(channel);
    port = await receiver.start();
  } else {
    const relay = new GatewayRelay({
      chainId: 'chain-local',
      nodeId: gatewayId,
      listenAddr: '127.0.0.1:0',
      logger: silentLogger,
      openHost: async (channels) => {
        receiver = host(gatewayKey);
        for (const c of channels) receiver.register(c);
        port = await receiver.start();
        return receiver;
      },
    });
    server = await serveGateway(relay, '127.0.0.1:0');
    remote = new GatewayHost({
      address: `127.0.0.1:${server.port}`,
      chainId: 'chain-local',
      nodeId: gatewayId,
      logger: silentLogger,
    });
    remote.register(channel);
    remote.start();
    await remote.waitAttached(10_000);
  }
  const sender = host(ed25519Generate(), [{ nodeId: gatewayId, host: '127.0.0.1', port }]);
  sender.register({ protocol: CHANNEL, maxMessageBytes: 1 << 20, onMessage: () => {} });
  await sender.start();
  await until('the peer connected', () => sender.peerCount === 1 && (remote?.peerCount ?? 1) === 1);
  const payload = new Uint8Array(bytes).fill(7);
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < frames; i++) sender.send(gatewayId, CHANNEL, payload);
  await until(`${frames} frames received`, () => got >= frames);
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  await sender.stop();
  remote?.stop();
  await server?.close();
  await receiver?.stop();
  return { ms, cpuUsPerFrame: (cpu.user + cpu.system) / frames };
}

const traced = process.argv.includes('--traced');
const positional = process.argv.slice(2).filter((a) => a !== '--traced');
const frames = Number(positional[0] ?? 20_000);
const bytes = Number(positional[1] ?? 1024);
if (
  !Number.isSafeInteger(frames) ||
  frames < 1 ||
  !Number.isSafeInteger(bytes) ||
  bytes < 1 ||
  bytes > 1 << 20
)
  throw new Error(
    `usage: gateway-relay.js [frames >= 1] [bytes 1..1048576], got ${process.argv.slice(2).join(' ')}`,
  );
const report = (label: string, r: { ms: number; cpuUsPerFrame: number }) => {
  const load = loadavg()[0]!.toFixed(1);
  console.log(
    `[bench:gateway-relay] ${label.padEnd(12)} ${frames} frames of ${bytes} B: ${r.ms.toFixed(0)} ms, ${Math.round(frames / (r.ms / 1000))} frames/s, ${((frames * bytes) / (r.ms / 1000) / 1e6).toFixed(1)} MB/s, ${r.cpuUsPerFrame.toFixed(1)} us CPU/frame (load ${load})`,
  );
};
if (traced) {
  const sdk = startDroppingSdk();
  for (let round = 0; round < 3; round++) {
    report('relay', await run('relay', frames, bytes));
    setTracingEnabled(true);
    const before = sdk.exported();
    const r = await run('relay', frames, bytes);
    setTracingEnabled(false);
    report('relay traced', r);
    await new Promise((resolve) => setTimeout(resolve, 6_000)); // the batch processor's 5 s delay
    console.log(`[bench:gateway-relay]   (${sdk.exported() - before} spans exported by the traced run)`);
  }
  await sdk.stop();
} else {
  for (const mode of ['direct', 'relay', 'direct', 'relay'] as const)
    report(mode, await run(mode, frames, bytes));
}
process.exit(0);
