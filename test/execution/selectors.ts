// Function selectors of the workload contract, from its ABI (ethers' Interface).
import { Interface } from 'ethers';
import type { Selectors } from './workload.js';

export function labSelectors(abi: unknown[]): Selectors {
  const i = new Interface(abi as never);
  const sel = (name: string) => i.getFunction(name)!.selector.slice(2);
  return {
    bump: sel('bump'),
    deploy: sel('deploy'),
    setChild: sel('setChild'),
    fail: sel('fail'),
    burnGas: sel('burnGas'),
  };
}
