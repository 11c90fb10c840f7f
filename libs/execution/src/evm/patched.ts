// Whether the installed @ethereumjs/evm carries the rewrites of scripts/patch-deps.mjs: its call
// path builds objects with Object.assign instead of spread-then-properties literals (which V8 11.3
// promotes wholesale), and its interpreter runs static-gas synchronous opcodes without a promise.
// Unpatched, everything works, only eth_call and block execution are slower and allocate far
// more; the executor says so in its log at start.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const MARKERS: Record<string, string> = {
  'evm.js': '/* noded: spread-free call path',
  'interpreter.js': '/* noded: synchronous static opcodes',
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
