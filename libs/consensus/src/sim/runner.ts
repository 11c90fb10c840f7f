// Runs many seeds and summarizes them; shared by the CLI and the tests.
import {
  type FaultMode,
  replayCommand,
  runSimulation,
  type SimOptions,
  type SimOverrides,
  type SimResult,
} from './simulation.js';

export interface SweepOptions extends SimOverrides {
  seeds: number;
  from?: number;
  engineStep?: SimOptions['engineStep'];
  targetHeights?: number;
  /** Stop at the first failing seed. */
  stopOnFailure?: boolean;
  onResult?: (r: SimResult) => void;
}

export interface SweepSummary {
  seeds: number;
  violations: number;
  failures: Array<{ seed: number; violations: string[]; replay: string }>;
  medianRoundsPerHeight: number;
  heights: number;
  byFaults: Record<FaultMode, number>;
}

export function median(values: number[]): number {
  if (values.length === 0) return 0;
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export async function runSweep(o: SweepOptions): Promise<SweepSummary> {
  const from = o.from ?? 1;
  const rounds: number[] = [];
  const summary: SweepSummary = {
    seeds: 0,
    violations: 0,
    failures: [],
    medianRoundsPerHeight: 0,
    heights: 0,
    byFaults: { none: 0, net: 0, crash: 0, all: 0 },
  };
  for (let seed = from; seed < from + o.seeds; seed++) {
    const r = await runSimulation({
      seed,
      validators: o.validators,
      byzantine: o.byzantine,
      faults: o.faults,
      voteExtensionsEnableHeight: o.voteExtensionsEnableHeight,
      engineStep: o.engineStep,
      targetHeights: o.targetHeights,
    });
    summary.seeds++;
    summary.byFaults[r.params.faults]++;
    summary.heights += r.heights;
    rounds.push(...r.roundsPerHeight);
    if (r.violations.length > 0) {
      summary.violations += r.violations.length;
      summary.failures.push({ seed, violations: r.violations, replay: replayCommand(r.params) });
    }
    o.onResult?.(r);
    if (o.stopOnFailure && r.violations.length > 0) break;
  }
  summary.medianRoundsPerHeight = median(rounds);
  return summary;
}

export function summaryLine(s: SweepSummary): string {
  const r = Number.isInteger(s.medianRoundsPerHeight)
    ? String(s.medianRoundsPerHeight)
    : s.medianRoundsPerHeight.toFixed(2);
  return `sim: ${s.seeds} seeds, ${s.violations} violations, median rounds/height ${r}, heights ${s.heights}`;
}
