// Runs after `npm ci` / `npm install` (package.json "postinstall"). Rewrites three object
// literals in @ethereumjs/evm's call path from spread-then-properties form ({ ...a, b: 1 }) to
// Object.assign with the same sources in the same order, which builds the same object.
//
// Why: on Node 20 (V8 11.3) an object literal that spreads an object and then adds properties
// takes a slow runtime path, and every object built that way survives the next young-generation
// GC (measured: `node --trace-gc-nvp` shows all of them promoted, while `{ b: 1, ...a }`,
// `{ ...a }` and Object.assign promote nothing). EthereumJS builds two such objects per call frame,
// the larger one with about 40 properties, so each eth_call promoted about 20 KB: the old
// generation filled up and a mark-compact ran about once a second under load, pausing the thread
// for 3-10 ms, and the spreads themselves cost half the time of a call. With this rewrite an
// in-process eth_call went from about 4,000 to 7,900 calls/s and the node's eth_call p99 from
// 11-15 ms to about 5 ms (docs/benchmarks.md).
//
// Each rewrite is an exact match of the installed version's text. When the text is not found (a
// different version), the file is left as it is and a warning is printed: the node still works,
// only slower. The executor logs at start whether the rewrite is in place (evm/patched.ts).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const MARKER = '/* noded: spread-free call path (scripts/patch-deps.mjs) */';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const file = join(root, 'node_modules', '@ethereumjs', 'evm', 'dist', 'esm', 'evm.js');

const rewrites = [
  {
    what: '_executeCall: the message handed to runInterpreter',
    from: `            result = await this.runInterpreter({
                ...{ codeAddress: message.codeAddress },
                ...message,
                gasLimit,
            }, {`,
    to: `            result = await this.runInterpreter(Object.assign({ codeAddress: message.codeAddress }, message, { gasLimit }), {`,
  },
  {
    what: 'runInterpreter: the result cleared after an exceptional halt',
    from: `            result = {
                ...result,
                logs: [],
                selfdestruct: new Map(),
                createdAddresses: new Set(),
            };`,
    to: `            result = Object.assign({}, result, {
                logs: [],
                selfdestruct: new Map(),
                createdAddresses: new Set(),
            });`,
  },
  {
    what: 'runInterpreter: the returned result and its runState',
    from: `        return {
            ...result,
            runState: {
                ...interpreterRes.runState,
                ...result,
                ...interpreter._env,
            },
            exceptionError: interpreterRes.exceptionError,`,
    to: `        return Object.assign({}, result, {
            runState: Object.assign({}, interpreterRes.runState, result, interpreter._env),
            exceptionError: interpreterRes.exceptionError,`,
    // The literal's closing brace becomes the end of the Object.assign call.
    tail: {
      from: `            returnValue: result.returnValue ?? new Uint8Array(0),
        };
    }`,
      to: `            returnValue: result.returnValue ?? new Uint8Array(0),
        });
    }`,
    },
  },
];

function main() {
  if (!existsSync(file)) {
    console.warn(`noded patch-deps: ${file} not found; nothing patched`);
    return;
  }
  let src = readFileSync(file, 'utf8');
  if (src.includes(MARKER)) return;
  let applied = 0;
  for (const r of rewrites) {
    const at = src.indexOf(r.from);
    if (at < 0 || src.indexOf(r.from, at + 1) >= 0) {
      console.warn(
        `noded patch-deps: @ethereumjs/evm changed (${r.what}); left unpatched, eth_call will be slower`,
      );
      continue;
    }
    let next = src.slice(0, at) + r.to + src.slice(at + r.from.length);
    if (r.tail) {
      const t = next.indexOf(r.tail.from, at);
      if (t < 0) {
        console.warn(`noded patch-deps: @ethereumjs/evm changed (${r.what}, end); left unpatched`);
        continue;
      }
      next = next.slice(0, t) + r.tail.to + next.slice(t + r.tail.from.length);
    }
    src = next;
    applied++;
  }
  if (applied === rewrites.length) src = `${MARKER}\n${src}`;
  if (applied > 0) writeFileSync(file, src);
  console.log(`noded patch-deps: @ethereumjs/evm call path: ${applied}/${rewrites.length} rewrites applied`);
}

main();
