// client.toml: settings of the commands that talk to a running node (Cosmos SDK key names).
import { CHAIN_IDS } from '../constants.js';
import { nodeHttpUrl } from '../values.js';
import { IsNodeUrl, IsOneOf } from './rules.js';
import { TomlSection } from './section.js';

export class ClientTomlFile extends TomlSection {
  @IsOneOf(['', ...CHAIN_IDS]) 'chain-id' = '';
  @IsOneOf(['os', 'file', 'kwallet', 'pass', 'test', 'memory']) 'keyring-backend' = 'test';
  @IsOneOf(['text', 'json']) output = 'text';
  @IsNodeUrl() node = 'tcp://localhost:26657';
  @IsOneOf(['sync', 'async']) 'broadcast-mode' = 'sync';
}

export const CLIENT_TOML_DOCS: Record<string, string> = {
  'chain-id': 'Chain id the client commands expect (set by `noded init`; "" = take it from the node).',
  'keyring-backend': 'Where client keys are kept: os, file, kwallet, pass, test or memory.',
  output: 'Default output format of client commands (`noded status`): "text" or "json".',
  node: 'CometBFT RPC of the node the client commands talk to (tcp:// means http://).',
  'broadcast-mode': 'How transactions are broadcast: "sync" (wait for CheckTx) or "async".',
};

export interface ClientToml {
  chainId: string;
  keyringBackend: string;
  output: 'text' | 'json';
  /** As written ("tcp://localhost:26657"). */
  node: string;
  /** The same node as an http(s) URL without a trailing slash ("http://localhost:26657"). */
  nodeHttpUrl: string;
  broadcastMode: 'sync' | 'async';
}

export function toClientToml(f: ClientTomlFile): ClientToml {
  return {
    chainId: f['chain-id'],
    keyringBackend: f['keyring-backend'],
    output: f.output as 'text' | 'json',
    node: f.node,
    nodeHttpUrl: nodeHttpUrl(f.node)!,
    broadcastMode: f['broadcast-mode'] as 'sync' | 'async',
  };
}
