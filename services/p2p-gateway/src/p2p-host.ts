// The P2P host on config.toml [p2p], as `noded start`, the light node and the p2p-gateway run it.
import type { ConfigToml } from '@noded/config';
import { BLOCK_PROTOCOL } from '@noded/consensus';
import { AddressBook, P2P_PROTOCOL_VERSION, P2PHost, PexReactor } from '@noded/p2p';
import { hostPort } from '@noded/service-shared/src/addresses.js';
import { NODED_VERSION } from '@noded/service-shared/src/version.js';
import type { Logger } from '@noded/types';

/**
 * The P2P host on config.toml [p2p], as both node kinds run it: what it advertises in the handshake,
 * its peers and limits, and with `pex` on, peer exchange over the address book in `addrBookFile`.
 * The caller registers its channels, then starts the host, then the returned `pex` (if any).
 */
export function p2pHostFor(o: {
  config: ConfigToml;
  chainId: string;
  nodeKey: { seed: Uint8Array; publicKey: Uint8Array; nodeId: string };
  rpcAddress: string;
  txIndex: boolean;
  /** config/addrbook.json, as CometBFT keeps it. */
  addrBookFile: string;
  logger: Logger;
}): { p2p: P2PHost; pex: PexReactor | undefined; listen: { host: string; port: number } } {
  const { config } = o;
  const listen = hostPort(config.p2p.laddr.raw);
  const p2p = new P2PHost({
    nodeKey: o.nodeKey,
    nodeInfo: {
      protocolVersion: { p2p: P2P_PROTOCOL_VERSION, block: BLOCK_PROTOCOL, app: 0 },
      id: o.nodeKey.nodeId,
      listenAddr: config.p2p.externalAddress || `${listen.host}:${listen.port}`,
      network: o.chainId,
      version: NODED_VERSION,
      moniker: config.moniker,
      other: { txIndex: o.txIndex ? 'on' : 'off', rpcAddress: o.rpcAddress },
    },
    listen,
    persistentPeers: config.p2p.persistentPeers,
    unconditionalPeerIds: config.p2p.unconditionalPeerIds,
    maxInboundPeers: config.p2p.maxNumInboundPeers,
    maxOutboundPeers: config.p2p.maxNumOutboundPeers,
    handshakeTimeoutMs: config.p2p.handshakeTimeoutMs,
    dialTimeoutMs: config.p2p.dialTimeoutMs,
    sendRate: config.p2p.sendRate,
    recvRate: config.p2p.recvRate,
    allowDuplicateIp: config.p2p.allowDuplicateIp,
    logger: o.logger,
  });
  const pex = config.p2p.pex
    ? new PexReactor(p2p, {
        book: new AddressBook({
          file: o.addrBookFile,
          strict: config.p2p.addrBookStrict,
          selfId: o.nodeKey.nodeId,
          logger: o.logger,
        }),
        seeds: config.p2p.seeds,
        seedMode: config.p2p.seedMode,
        persistentIds: config.p2p.persistentPeers.map((p) => p.nodeId),
        logger: o.logger.child({ module: 'pex' }),
      })
    : undefined;
  return { p2p, pex, listen };
}
