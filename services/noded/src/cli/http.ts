// The CometBFT-style RPC client the CLI needs: GET a path, unwrap the JSON-RPC envelope, and turn
// every failure into one line that says which node did not answer and why. node:http rather than
// fetch, which refuses some ports outright and hides the socket error.
import { get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';
import { nodeHttpUrl } from '@noded/config';
import { CliError } from './util.js';

/** The http(s) base URL of --node, or a CliError naming the flag. */
export function nodeUrlFromFlag(text: string): string {
  const url = nodeHttpUrl(text);
  if (!url) {
    throw new CliError(
      `--node: must be a URL such as tcp://localhost:26657 or http://host:26657, got ${JSON.stringify(text)}`,
    );
  }
  return url;
}

const MAX_BODY = 16 * 1024 * 1024;

function fetchText(url: string, timeoutMs: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const get = url.startsWith('https:') ? httpsGet : httpGet;
    const req = get(url, { headers: { accept: 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_BODY) req.destroy(new Error(`response larger than ${MAX_BODY} bytes`));
        else chunks.push(c);
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
      );
      res.on('error', reject);
    });
    // One deadline for the whole exchange, connect included.
    const timer = setTimeout(
      () => req.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })),
      timeoutMs,
    );
    req.on('close', () => clearTimeout(timer));
    req.on('error', reject);
  });
}

/** GETs `<base><path>` and returns the `result` of a JSON-RPC envelope (or the bare body). */
export async function getRpc(
  base: string,
  path: string,
  timeoutMs: number,
): Promise<Record<string, unknown>> {
  let res: { status: number; body: string };
  try {
    res = await fetchText(`${base}${path}`, timeoutMs);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ETIMEDOUT' ? `no answer within ${timeoutMs} ms` : (code ?? (err as Error).message);
    throw new CliError(`no node answers at ${base} (${why})`);
  }
  let body: unknown;
  try {
    body = JSON.parse(res.body);
  } catch {
    throw new CliError(
      `the node at ${base} answered ${path} with HTTP ${res.status} and a body that is not JSON`,
    );
  }
  const b = (typeof body === 'object' && body !== null ? body : {}) as {
    result?: unknown;
    error?: { message?: string; data?: string };
  };
  if (res.status !== 200 || b.error) {
    const msg = b.error ? `${b.error.message ?? ''} ${b.error.data ?? ''}`.trim() : `HTTP ${res.status}`;
    throw new CliError(`the node at ${base} answered ${path} with an error: ${msg}`);
  }
  const result = b.result ?? body;
  if (typeof result !== 'object' || result === null) {
    throw new CliError(`the node at ${base} answered ${path} with something that is not a CometBFT response`);
  }
  return result as Record<string, unknown>;
}
