// Whether the installed @ethereumjs/evm carries the rewrites of scripts/patch-deps.mjs: its call
// path builds objects with Object.assign instead of spread-then-properties literals (which V8 11.3
// promotes wholesale), its interpreter runs an opcode without a promise unless its gas or handler
// really is asynchronous, and the dynamic-gas handlers that never await are plain functions.
// Unpatched, everything works, only eth_call and block execution are slower and allocate far
// more; the executor says so in its log at start.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const MARKERS: Record<string, string> = {
  'evm.js': '/* noded: spread-free call path',
  'interpreter.js': '/* noded: synchronous opcodes',
  'opcodes/gas.js': '/* noded: synchronous gas handlers',
};

/** The files of @ethereumjs/evm's dist/esm that lack their rewrite (empty when all are in place). */
export function evmFilesUnpatched(): string[] {
  const missing: string[] = [];
  for (const [name, marker] of Object.entries(MARKERS)) {
    try {
      const file = fileURLToPath(new URL(`./${name}`, import.meta.resolve('@ethereumjs/evm')));
      if (!readFileSync(file, 'utf8').startsWith(marker)) missing.push(name);
    } catch {
      missing.push(name);
    }
  }
  return missing;
}
