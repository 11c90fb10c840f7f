// Network presets (seed §2.1). The public URLs live in one shipped file,
// libs/config/networks/networks.json, which an operator overrides per home with
// <home>/config/networks.json (or the file named by $NODED_NETWORKS_FILE). The WebSocket URL is never
// configured on its own: it is the RPC URL with scheme wss (https) or ws (http) and path /websocket.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CHAIN_IDS, type ChainId, EVM_CHAIN_IDS } from './constants.js';
import { type ConfigProblem, describeValue } from './problems.js';

export interface NetworkInfo {
  chainId: ChainId;
  evmChainId: number;
  rpcEndpoint: string;
  websocket: string;
  /** Mainnet and testnet only. */
  explorer?: string;
}

/** Seed §2.1 rule: the WebSocket URL is the RPC URL with scheme wss/ws and the path /websocket. */
export function websocketUrlFor(rpcEndpoint: string): string {
  const url = new URL(rpcEndpoint);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new Error(`rpc_endpoint must be an http(s) URL, got ${JSON.stringify(rpcEndpoint)}`);
  }
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/websocket`;
  url.search = '';
  url.hash = '';
  return url.href;
}

/** Where a file shipped beside this package lives (walks up from the compiled module to the repo). */
export function shippedFile(...parts: string[]): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'libs', 'config', 'networks', ...parts);
    if (existsSync(candidate)) return candidate;
    const up = dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

/** The genesis.json shipped for a public network, if any. */
export function shippedGenesisPath(chainId: ChainId): string | undefined {
  return chainId === 'chain-local' ? undefined : shippedFile(chainId, 'genesis.json');
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '127.0.0.1' || host === '[::1]';
}

/** Checks one network entry (after merging) and returns it, or pushes problems. */
function checkEntry(
  label: string,
  chainId: ChainId,
  entry: Obj,
  problems: ConfigProblem[],
): NetworkInfo | undefined {
  const p = (key: string, message: string) =>
    problems.push({ file: label, key: `${chainId}.${key}`, message });
  const before = problems.length;
  for (const k of Object.keys(entry)) {
    if (!['rpc_endpoint', 'websocket', 'explorer'].includes(k)) {
      p(k, 'unknown key (allowed: rpc_endpoint, websocket, explorer)');
    }
  }
  const remote = chainId !== 'chain-local';
  let rpc: URL | undefined;
  try {
    rpc = new URL(String(entry.rpc_endpoint));
  } catch {
    // reported below
  }
  if (typeof entry.rpc_endpoint !== 'string' || !rpc || !['http:', 'https:'].includes(rpc.protocol)) {
    p('rpc_endpoint', `must be an http(s) URL, got ${describeValue(entry.rpc_endpoint)}`);
    rpc = undefined;
  } else if (remote && rpc.protocol !== 'https:') {
    p(
      'rpc_endpoint',
      `must be an https URL for a remote network (its WebSocket is wss), got ${describeValue(entry.rpc_endpoint)}`,
    );
    rpc = undefined;
  } else if (!remote && (rpc.protocol !== 'http:' || !isLoopback(rpc.hostname))) {
    p(
      'rpc_endpoint',
      `must be an http URL on this machine (localhost) for chain-local, got ${describeValue(entry.rpc_endpoint)}`,
    );
    rpc = undefined;
  }
  const websocket = rpc ? websocketUrlFor(entry.rpc_endpoint as string) : undefined;
  if (websocket && entry.websocket !== undefined && entry.websocket !== websocket) {
    p(
      'websocket',
      `must be the RPC URL with scheme ${remote ? 'wss' : 'ws'} and path /websocket (${JSON.stringify(websocket)}), got ${describeValue(entry.websocket)}`,
    );
  }
  let explorer: string | undefined;
  if (remote) {
    let ok = false;
    try {
      ok =
        typeof entry.explorer === 'string' && ['http:', 'https:'].includes(new URL(entry.explorer).protocol);
    } catch {
      ok = false;
    }
    if (!ok) p('explorer', `must be an http(s) URL, got ${describeValue(entry.explorer)}`);
    else explorer = entry.explorer as string;
  } else if (entry.explorer !== undefined) {
    p('explorer', 'chain-local has no explorer (seed §2.1); remove the key');
  }
  if (problems.length > before || !rpc || !websocket) return undefined;
  const info: NetworkInfo = {
    chainId,
    evmChainId: EVM_CHAIN_IDS[chainId],
    rpcEndpoint: entry.rpc_endpoint as string,
    websocket,
  };
  if (explorer) info.explorer = explorer;
  return info;
}

function readJsonFile(label: string, file: string, problems: ConfigProblem[]): Obj | undefined {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    problems.push({
      file: label,
      key: '',
      message: code ? `cannot read ${file}: ${code}` : `not valid JSON (${file}): ${(err as Error).message}`,
    });
    return undefined;
  }
  if (!isObj(json)) {
    problems.push({
      file: label,
      key: '',
      message: `must be a JSON object keyed by chain id, got ${describeValue(json)}`,
    });
    return undefined;
  }
  return json;
}

/**
 * The three networks: the shipped defaults, with the entries of `overrideFile` (when given and
 * present) merged over them key by key.
 */
export function loadNetworks(overrideFile?: string): { networks: NetworkInfo[]; problems: ConfigProblem[] } {
  const problems: ConfigProblem[] = [];
  const shipped = shippedFile('networks.json');
  if (!shipped) {
    return {
      networks: [],
      problems: [
        {
          file: 'networks.json',
          key: '',
          message: 'the shipped libs/config/networks/networks.json is missing',
        },
      ],
    };
  }
  const base = readJsonFile('networks.json', shipped, problems) ?? {};
  let over: Obj = {};
  if (overrideFile && existsSync(overrideFile)) {
    over = readJsonFile(overrideFile, overrideFile, problems) ?? {};
    for (const k of Object.keys(over)) {
      if (!(CHAIN_IDS as readonly string[]).includes(k)) {
        problems.push({
          file: overrideFile,
          key: k,
          message: `unknown chain id (known: ${CHAIN_IDS.join(', ')})`,
        });
      } else if (!isObj(over[k])) {
        problems.push({
          file: overrideFile,
          key: k,
          message: `must be an object, got ${describeValue(over[k])}`,
        });
      }
    }
  }
  const networks: NetworkInfo[] = [];
  for (const chainId of CHAIN_IDS) {
    const b = isObj(base[chainId]) ? base[chainId] : {};
    const o = isObj(over[chainId]) ? over[chainId] : {};
    const label = Object.keys(o).length > 0 ? (overrideFile as string) : 'networks.json';
    const merged = { ...b, ...o };
    // An override that moves the RPC endpoint moves the WebSocket with it (the rule), so a stale
    // shipped websocket value is not carried over.
    if (o.rpc_endpoint !== undefined && o.websocket === undefined) delete merged.websocket;
    const info = checkEntry(label, chainId, merged, problems);
    if (info) networks.push(info);
  }
  return { networks, problems };
}
