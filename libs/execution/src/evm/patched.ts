// Whether the installed @ethereumjs/evm carries the rewrite of scripts/patch-deps.mjs (its call
// path builds objects with Object.assign instead of spread-then-properties literals, which V8 11.3
// promotes wholesale; see that script). Unpatched, everything works, only eth_call and block
// execution allocate far more old-generation garbage; the executor says so in its log at start.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const MARKER = '/* noded: spread-free call path';

export function evmCallPathPatched(): boolean {
  try {
    const file = fileURLToPath(new URL('./evm.js', import.meta.resolve('@ethereumjs/evm')));
    return readFileSync(file, 'utf8').startsWith(MARKER);
  } catch {
    return false;
  }
}
