// solc-js (offline) for the tests: compiles Solidity sources with the optimizer on, memoised per
// input. test/execution and test/e2e both compile through it.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const solc = require('solc') as { compile(input: string): string };

export interface CompiledContract {
  abi: unknown[];
  bytecode: `0x${string}`;
  /** Runtime code (what an account holds after deployment). */
  deployed: `0x${string}`;
}

const cache = new Map<string, Record<string, CompiledContract>>();

/**
 * Compiles `sources` (file name -> text); returns every contract by name. `evmVersion` unset means
 * solc's default (the chain's hardfork); the e2e tests target cancun, as the Hardhat tests do.
 */
export function compileSolidity(
  sources: Record<string, string>,
  evmVersion?: string,
): Record<string, CompiledContract> {
  const id = JSON.stringify([sources, evmVersion ?? null]);
  const hit = cache.get(id);
  if (hit) return hit;
  const input = {
    language: 'Solidity',
    sources: Object.fromEntries(Object.entries(sources).map(([k, v]) => [k, { content: v }])),
    settings: {
      optimizer: { enabled: true, runs: 200 },
      ...(evmVersion ? { evmVersion } : {}),
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
    },
  };
  const out = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: Array<{ severity: string; formattedMessage: string }>;
    contracts: Record<
      string,
      Record<
        string,
        { abi: unknown[]; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }
      >
    >;
  };
  const errors = (out.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join('\n'));
  const result: Record<string, CompiledContract> = {};
  for (const file of Object.values(out.contracts)) {
    for (const [name, c] of Object.entries(file)) {
      result[name] = {
        abi: c.abi,
        bytecode: `0x${c.evm.bytecode.object}`,
        deployed: `0x${c.evm.deployedBytecode.object}`,
      };
    }
  }
  cache.set(id, result);
  return result;
}
