// Runs after `npm ci` / `npm install` (package.json "postinstall"). Performance rewrites of the
// installed JavaScript of @ethereumjs/evm, @ethereumjs/util and @chainsafe/libp2p-yamux (6), none of
// which changes what they compute, and one correctness fix of @chainsafe/libp2p-yamux (5).
//
// 1. evm.js: three object literals in the call path go from spread-then-properties form
//    ({ ...a, b: 1 }) to Object.assign with the same sources in the same order, which builds the
//    same object. On Node 20 (V8 11.3) an object literal that spreads an object and then adds
//    properties takes a slow runtime path, and every object built that way survives the next
//    young-generation GC (measured: `node --trace-gc-nvp` shows all of them promoted, while
//    `{ b: 1, ...a }`, `{ ...a }` and Object.assign promote nothing). EthereumJS builds two such
//    objects per call frame, the larger one with about 40 properties, so each eth_call promoted
//    about 20 KB: the old generation filled up and a mark-compact ran about once a second under
//    load, pausing the thread for 3-10 ms, and the spreads themselves cost half the time of a call.
//    With this rewrite an in-process eth_call went from about 4,000 to 7,900 calls/s.
//
// 2. interpreter.js: every opcode ran through the async `runStep`, so each step built a promise
//    and an async frame and the loop awaited it (about 60 KB of garbage per ERC-20 balanceOf). The
//    rewrite adds `runStepSync`, which does what `runStep` does in the same order (gas, program
//    counter, EIP-7928 check, handler, witness commit) and awaits only a gas handler or opcode
//    handler that actually returned a promise (state reads, calls). Invalid opcodes, tracing
//    'step' listeners, DEBUG, the profiler and Verkle code-chunk charging still go through
//    `runStep`.
// 3. opcodes/gas.js: see desyncGasHandlers below.
// 4. @ethereumjs/util bytes.js: see UTIL_REWRITES below.
// 5. @chainsafe/libp2p-yamux muxer.js: a new outbound stream sends its opening window update from
//    a microtask; when the connection closed in between (a peer hanging up as a stream is opened
//    to it) the send throws StreamStateError out of the microtask, an uncaught exception that
//    killed the node (seen in test/e2e/evidence). The rewrite fails that stream instead.
//    With 2-4, an in-process eth_call went from about 8,400 to 12,000-14,000 calls/s (noisy
//    machine; A/B pairs in docs/benchmarks.md), 171 -> 115 KB allocated per call.
//
// Each rewrite is an exact match of the installed version's text. When the text is not found (a
// different version), the file is left as it is and a warning is printed: the node still works,
// only slower. The executor logs at start whether the rewrites are in place (evm/patched.ts).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const EVM_REWRITES = [
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

const INTERPRETER_REWRITES = [
  {
    what: 'run: the step of the interpreter loop',
    from: `                await this.runStep(opCodeObj);`,
    to: `                const stepping = this.runStepSync(opCodeObj);
                if (stepping !== undefined)
                    await stepping;`,
  },
  {
    what: 'runStepSync: an opcode without a promise unless its gas or handler returns one',
    from: `    async runStep(opcodeObj) {`,
    to: `    runStepSync(opcodeObj) {
        const opEntry = opcodeObj ?? this.lookupOpInfo(this._runState.opCode);
        const opInfo = opEntry.opcodeInfo;
        if (opInfo.isInvalid ||
            this.profilerOpts?.enabled === true ||
            this._evm.DEBUG ||
            this._evm.events.listenerCount('step') > 0 ||
            (this._env.chargeCodeAccesses === true &&
                (this.common.isActivatedEIP(6800) || this.common.isActivatedEIP(7864)))) {
            return this.runStep(opEntry);
        }
        let gas = opInfo.feeBigInt;
        if (opInfo.dynamicGas) {
            gas = opEntry.gasHandler(this._runState, gas, this.common);
            if (typeof gas !== 'bigint') {
                return gas.then((g) => this.runStepCharged(opEntry, g));
            }
        }
        return this.runStepCharged(opEntry, gas);
    }
    runStepCharged(opEntry, gas) {
        this.useGas(gas, opEntry.opcodeInfo);
        this._runState.programCounter++;
        consumeEip7928PostTargetCallOog(this._runState);
        const opFn = opEntry.opHandler;
        const done = opFn(this._runState, this.common);
        if (done !== undefined && typeof done.then === 'function') {
            return done.then(() => {
                this._runState.env.accessWitness?.commit();
            });
        }
        this._runState.env.accessWitness?.commit();
        return undefined;
    }
    async runStep(opcodeObj) {`,
  },
];

// gas.js declares every dynamic-gas handler `async`, though most never await (memory expansion,
// KECCAK256 words, LOG data, EIP-2929 warm/cold lookups): each such step built a promise for a
// bigint. The handlers whose body has no `await` lose their `async`; the rest (SSTORE,
// EXTCODECOPY, CREATE, SELFDESTRUCT, ...) keep it, and the CALL family, which returns the
// promise of an async helper, still returns that promise: runStepSync awaits whatever is not a
// bigint. Thrown errors reach the same catch in the interpreter loop either way.
const HANDLER = 'async function (runState, gas, common) {';

function desyncGasHandlers(src) {
  let out = '';
  let from = 0;
  let changed = 0;
  for (let at = src.indexOf(HANDLER); at >= 0; at = src.indexOf(HANDLER, at + 1)) {
    let depth = 1;
    let end = at + HANDLER.length;
    while (depth > 0 && end < src.length) {
      const c = src[end++];
      if (c === '{') depth++;
      else if (c === '}') depth--;
    }
    if (depth !== 0) return { src, changed: -1 };
    if (src.slice(at, end).includes('await')) continue;
    out += src.slice(from, at) + HANDLER.slice('async '.length);
    from = at + HANDLER.length;
    changed++;
  }
  return { src: out + src.slice(from), changed };
}

// @ethereumjs/util's byte helpers sit under every EVM word written to memory or used as a storage
// key (setLengthLeft(bigIntToBytes(x), 32)), and under trie and transaction code. Padding built
// its result by spreading two arrays into a third; the hex conversions ran a regular expression
// over a string they had just made. Same results, without the detours.
const UTIL_REWRITES = [
  {
    what: 'setLength: zero padding',
    from: `    if (msg.length < length) {
        return right
            ? new Uint8Array([...msg, ...new Uint8Array(length - msg.length)])
            : new Uint8Array([...new Uint8Array(length - msg.length), ...msg]);
    }`,
    to: `    if (msg.length < length) {
        const padded = new Uint8Array(length);
        padded.set(msg, right ? 0 : length - msg.length);
        return padded;
    }`,
  },
  {
    what: 'hexToBytes: the prefix is known to be there',
    from: `    return hexToBytesNoble(padToEven(stripHexPrefix(hex)));`,
    to: `    return hexToBytesNoble(padToEven(hex.slice(2)));`,
  },
  {
    what: 'bigIntToBytes: no prefix added to be stripped again',
    from: `    const bytes = hexToBytes(\`0x\${padToEven(num.toString(16))}\`);`,
    to: `    const bytes = hexToBytesNoble(padToEven(num.toString(16)));`,
  },
];

const YAMUX_REWRITES = [
  {
    what: 'newStream: the opening window update of a stream whose connection closed',
    from: `        queueMicrotask(() => {
            stream.sendWindowUpdate();
        });`,
    to: `        queueMicrotask(() => {
            try {
                stream.sendWindowUpdate();
            }
            catch (err) {
                stream.abort(err);
            }
        });`,
  },
];

// 6. stream.js: a stream answered every data frame it received with a window update frame (a yamux
//    header through noise and the socket), however little of its window the frame used. The
//    rewrite sends one only when at least half of the receive window has been consumed, as go-yamux
//    does, or when the update carries a flag (the SYN/ACK that opens a stream). The sender still
//    holds at least half a window meanwhile, so nothing waits for an update that is not sent; the
//    window's growth (doubled when a window is used up within four round trips) is judged only
//    when an update is sent. test/p2p/yamux-window.test.ts drives the patched stream.
const YAMUX_STREAM_REWRITES = [
  {
    what: 'sendWindowUpdate: an update only once half the window is used',
    from: `        // determine the flags if any
        const flags = this.getSendFlags();
`,
    to: `        // determine the flags if any
        const flags = this.getSendFlags();
        if (flags === 0 && this.recvWindow - this.recvWindowCapacity < this.recvWindow / 2) {
            return;
        }
`,
  },
];

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const esm = join(root, 'node_modules', '@ethereumjs', 'evm', 'dist', 'esm');

const patches = [
  {
    file: join(root, 'node_modules', '@chainsafe', 'libp2p-yamux', 'dist', 'src', 'muxer.js'),
    marker: '/* noded: a stream opened on a closing connection fails alone (scripts/patch-deps.mjs) */',
    pkg: '@chainsafe/libp2p-yamux',
    what: 'stream opening',
    rewrites: YAMUX_REWRITES,
  },
  {
    file: join(root, 'node_modules', '@chainsafe', 'libp2p-yamux', 'dist', 'src', 'stream.js'),
    marker: '/* noded: window updates once half the window is used (scripts/patch-deps.mjs) */',
    pkg: '@chainsafe/libp2p-yamux',
    what: 'window updates',
    rewrites: YAMUX_STREAM_REWRITES,
  },
  {
    file: join(root, 'node_modules', '@ethereumjs', 'util', 'dist', 'esm', 'bytes.js'),
    marker: '/* noded: direct byte padding and hex (scripts/patch-deps.mjs) */',
    pkg: '@ethereumjs/util',
    what: 'byte helpers',
    rewrites: UTIL_REWRITES,
  },
  {
    file: join(esm, 'evm.js'),
    marker: '/* noded: spread-free call path (scripts/patch-deps.mjs) */',
    pkg: '@ethereumjs/evm',
    what: 'call path',
    rewrites: EVM_REWRITES,
  },
  {
    file: join(esm, 'opcodes', 'gas.js'),
    marker: '/* noded: synchronous gas handlers (scripts/patch-deps.mjs) */',
    pkg: '@ethereumjs/evm',
    what: 'dynamic gas handlers',
    transform: desyncGasHandlers,
  },
  {
    file: join(esm, 'interpreter.js'),
    marker: '/* noded: synchronous opcodes (scripts/patch-deps.mjs) */',
    pkg: '@ethereumjs/evm',
    what: 'interpreter loop',
    rewrites: INTERPRETER_REWRITES,
  },
];

function apply({ file, marker, pkg, what, rewrites, transform }) {
  if (!existsSync(file)) {
    console.warn(`noded patch-deps: ${file} not found; nothing patched`);
    return;
  }
  let src = readFileSync(file, 'utf8');
  if (src.includes(marker)) return;
  if (transform) {
    const r = transform(src);
    if (r.changed <= 0) {
      console.warn(`noded patch-deps: ${pkg} changed (${what}); left unpatched, the node will be slower`);
      return;
    }
    writeFileSync(file, `${marker}\n${r.src}`);
    console.log(`noded patch-deps: ${pkg} ${what}: ${r.changed} made synchronous`);
    return;
  }
  let applied = 0;
  for (const r of rewrites) {
    const at = src.indexOf(r.from);
    if (at < 0 || src.indexOf(r.from, at + 1) >= 0) {
      console.warn(`noded patch-deps: ${pkg} changed (${r.what}); left unpatched, the node will be slower`);
      continue;
    }
    let next = src.slice(0, at) + r.to + src.slice(at + r.from.length);
    if (r.tail) {
      const t = next.indexOf(r.tail.from, at);
      if (t < 0) {
        console.warn(`noded patch-deps: ${pkg} changed (${r.what}, end); left unpatched`);
        continue;
      }
      next = next.slice(0, t) + r.tail.to + next.slice(t + r.tail.from.length);
    }
    src = next;
    applied++;
  }
  // All or nothing per file: a half-applied interpreter rewrite would call a missing method.
  if (applied !== rewrites.length) {
    console.warn(
      `noded patch-deps: ${pkg} ${what}: ${applied}/${rewrites.length} matched; file left as installed`,
    );
    return;
  }
  writeFileSync(file, `${marker}\n${src}`);
  console.log(`noded patch-deps: ${pkg} ${what}: ${applied}/${rewrites.length} rewrites applied`);
}

for (const p of patches) apply(p);
