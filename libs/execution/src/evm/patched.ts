// Whether the installed EthereumJS packages carry the rewrites of scripts/patch-deps.mjs: the EVM's
// call path builds objects with Object.assign instead of spread-then-properties literals (which
// V8 11.3 promotes wholesale), its interpreter runs an opcode without a promise unless its gas or
// handler really is asynchronous, the dynamic-gas handlers that never await are plain functions,
// and util's byte padding and hex helpers skip their detours. Unpatched, everything works, only
// eth_call and block execution are slower and allocate far more; the executor says so in its log.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const MARKERS: Array<[pkg: string, file: string, marker: string]> = [
  ['@ethereumjs/evm', 'evm.js', '/* noded: spread-free call path'],
  ['@ethereumjs/evm', 'interpreter.js', '/* noded: synchronous opcodes'],
  ['@ethereumjs/evm', 'opcodes/gas.js', '/* noded: synchronous gas handlers'],
  ['@ethereumjs/util', 'bytes.js', '/* noded: direct byte padding and hex'],
];

/** The files (package/dist path) that lack their rewrite; empty when all are in place. */
export function evmFilesUnpatched(): string[] {
  const missing: string[] = [];
  for (const [pkg, name, marker] of MARKERS) {
    try {
      const file = fileURLToPath(new URL(`./${name}`, import.meta.resolve(pkg)));
      if (!readFileSync(file, 'utf8').startsWith(marker)) missing.push(`${pkg}/${name}`);
    } catch {
      missing.push(`${pkg}/${name}`);
    }
  }
  return missing;
}
