// Started by worker-limits.test.ts: the JSON-RPC thread under a small heap cap, as the node runs it
// (onFatal stops the process with a non-zero code, as noded's lifecycle does). Prints the HTTP port.
// A separate process because a worker that overshoots its cap inside one native call (JSON.parse of
// a huge body) aborts the whole process (nodejs/node#47224), test runner included.

import { EthRpcThread } from '@noded/cli/src/rpc-edge/thread.js';
import { defaultEthRpcOptions } from '@noded/rpc';
import { EventBus, silentLogger } from '@noded/types';
import { FakeChain } from '../rpc-eth/fake-chain.js';

const bus = new EventBus();
const thread = new EthRpcThread({
  chain: new FakeChain(bus),
  bus,
  logger: silentLogger,
  // A body limit far over the heap cap, so that one request can reach the cap.
  options: { ...defaultEthRpcOptions, maxBodyBytes: 200_000_000 },
  clientVersion: 'noded/test',
  devKeys: [],
  devChain: undefined,
  onFatal: (err) => {
    console.log(`fatal: ${err.message}`);
    process.exit(70);
  },
  resourceLimits: { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 4 },
});
const port = await thread.listenHttp('127.0.0.1', 0);
console.log(`port ${port}`);
