// The e2e harness's answer to a probed-free port taken before the node binds it (two test files run
// at once): the start is retried on newly drawn ports, and only for that cause.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { initLocalHome, jsonRpcResult, type NodePorts, startOnFreePorts } from './harness.js';

function occupy(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(port, '127.0.0.1', () => resolve(srv));
  });
}

describe('e2e harness: a port taken between probe and bind', { timeout: 300_000 }, () => {
  let home: string;
  let ports: NodePorts;
  let squatter: Server;
  before(async () => {
    ({ home, ports } = await initLocalHome());
    squatter = await occupy(ports.api);
  });
  after(async () => {
    await new Promise((r) => squatter?.close(r));
    rmSync(home, { recursive: true, force: true });
  });

  it('with one attempt the start fails naming the taken port', async () => {
    await assert.rejects(startOnFreePorts(home, ports, {}, 1), (err: Error) => {
      assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${ports.api}: address already in use`));
      return true;
    });
  });

  it('with retries the node starts on newly drawn ports and answers there', async () => {
    const node = await startOnFreePorts(home, ports);
    try {
      assert.notEqual(node.ports.api, ports.api, 'the taken port was replaced');
      assert.equal(await jsonRpcResult(node.ethUrl, 'eth_chainId'), '0x7a69');
    } finally {
      await node.stop();
    }
  });
});
