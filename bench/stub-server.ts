// A trivial JSON-RPC server on raw sockets, for the load generator's own ceiling: it answers every
// eth_sendRawTransaction with a canned hash and every eth_getTransactionReceipt with a canned status-1
// receipt (the request ids echoed, found with a regex, nothing parsed), anything else with "0x1".
// Run in its own process (`node dist/bench/stub-server.js`), it prints `listening <port>` and serves
// until SIGTERM, so that its CPU is not counted as the generator's.
import { createServer, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';

const CANNED_HASH = `0x${'ab'.repeat(32)}`;
const RECEIPT = '{"status":"0x1","blockNumber":"0x1","transactionIndex":"0x0","gasUsed":"0x5208"}';

/** The canned reply body to one request body (a single call or a batch). */
export function cannedReply(body: string): string {
  const one = (id: string, method: string) =>
    `{"jsonrpc":"2.0","id":${id},"result":${
      method === 'eth_sendRawTransaction'
        ? `"${CANNED_HASH}"`
        : method === 'eth_getTransactionReceipt'
          ? RECEIPT
          : method === 'eth_chainId'
            ? '"0x7a69"'
            : '"0x1"'
    }}`;
  const re = /"id":\s*(\d+|"[^"]*")\s*,\s*"method":\s*"([^"]+)"/g;
  const calls = [...body.matchAll(re)].map((m) => one(m[1], m[2]));
  return body.trimStart().startsWith('[')
    ? `[${calls.join(',')}]`
    : (calls[0] ?? '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}');
}

function serve(socket: Socket): void {
  let buf: Buffer = Buffer.alloc(0);
  socket.setNoDelay(true);
  socket.on('error', () => socket.destroy());
  socket.on('data', (d: Buffer) => {
    buf = buf.length === 0 ? d : Buffer.concat([buf, d]);
    for (;;) {
      const headEnd = buf.indexOf('\r\n\r\n');
      if (headEnd < 0) return;
      const head = buf.toString('latin1', 0, headEnd);
      const m = /\r\ncontent-length:\s*(\d+)/i.exec(head);
      const len = m ? Number(m[1]) : 0;
      if (buf.length < headEnd + 4 + len) return;
      const body = buf.toString('utf8', headEnd + 4, headEnd + 4 + len);
      buf = buf.subarray(headEnd + 4 + len);
      const reply = cannedReply(body);
      socket.write(
        `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(reply)}\r\nConnection: keep-alive\r\n\r\n${reply}`,
      );
    }
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const server = createServer(serve);
  server.listen(0, '127.0.0.1', () => {
    const a = server.address();
    console.log(`listening ${typeof a === 'object' && a ? a.port : 0}`);
  });
  process.on('SIGTERM', () => {
    server.close();
    process.exit(0);
  });
}
