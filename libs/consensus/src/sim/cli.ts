// npm run sim -- --seeds N [--from S] [--validators V] [--byzantine B] [--faults none|net|crash|all] [--vote-extensions H] [--verbose]
// Prints one summary line and, for each failing seed, the command that replays it exactly.
// Exit status 1 when any invariant was violated, 2 on bad arguments.

import { runSweep, summaryLine } from './runner.js';
import { FAULT_MODES, type FaultMode } from './simulation.js';

const USAGE =
  'usage: sim --seeds N [--from S] [--validators V] [--byzantine B] [--faults none|net|crash|all] [--vote-extensions H] [--verbose]';

function parse(argv: string[]) {
  const out: {
    seeds?: number;
    from?: number;
    validators?: number;
    byzantine?: number;
    faults?: FaultMode;
    voteExtensions?: number;
    verbose: boolean;
  } = {
    verbose: false,
  };
  const int = (flag: string, v: string | undefined): number => {
    if (v === undefined || !/^\d+$/.test(v))
      throw new Error(`${flag} needs a non-negative integer, got ${v ?? 'nothing'}`);
    return Number(v);
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const [flag, inline] = a.includes('=')
      ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]
      : [a, undefined];
    const value = () => inline ?? argv[++i];
    switch (flag) {
      case '--seeds':
        out.seeds = int(flag, value());
        break;
      case '--from':
        out.from = int(flag, value());
        break;
      case '--validators':
        out.validators = int(flag, value());
        break;
      case '--byzantine':
        out.byzantine = int(flag, value());
        break;
      case '--faults': {
        const v = value();
        if (!FAULT_MODES.includes(v as FaultMode))
          throw new Error(`--faults must be one of ${FAULT_MODES.join('|')}, got ${v ?? 'nothing'}`);
        out.faults = v as FaultMode;
        break;
      }
      case '--vote-extensions':
        out.voteExtensions = int(flag, value());
        break;
      case '--verbose':
        out.verbose = true;
        break;
      case '--help':
      case '-h':
        console.log(USAGE);
        process.exit(0);
        break;
      default:
        throw new Error(`unknown argument ${a}`);
    }
  }
  if (out.seeds === undefined || out.seeds < 1) throw new Error('--seeds N (N >= 1) is required');
  return out;
}

async function main(): Promise<void> {
  let args: ReturnType<typeof parse>;
  try {
    args = parse(process.argv.slice(2));
  } catch (err) {
    console.error(`sim: ${(err as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  const started = Date.now();
  let summary: Awaited<ReturnType<typeof runSweep>>;
  try {
    summary = await runSweep({
      seeds: args.seeds!,
      from: args.from,
      validators: args.validators,
      byzantine: args.byzantine,
      faults: args.faults,
      voteExtensionsEnableHeight: args.voteExtensions,
      onResult: (r) => {
        if (!args.verbose) return;
        const p = r.params;
        console.log(
          `seed ${p.seed}: v=${p.validators} byz=${p.byzantine} faults=${p.faults} powers=${p.powers.join('/')} heights=${r.heights} ` +
            `rounds=${r.roundsPerHeight.join('')} crashes=${r.crashes} equivocations=${r.equivocations} evidence=${r.evidenceCommitted} ` +
            (p.voteExtensionsEnableHeight > 0
              ? `extended-proposals=${r.extendedProposals} bad-extensions=${r.badExtensions} `
              : '') +
            `simtime=${(r.simTimeMs / 1000).toFixed(1)}s events=${r.events}${r.violations.length ? ` VIOLATIONS: ${r.violations.join(' | ')}` : ''}`,
        );
      },
    });
  } catch (err) {
    console.error(`sim: ${(err as Error).message}`);
    process.exit(2);
  }
  for (const f of summary.failures) {
    console.log(`FAIL seed ${f.seed}: ${f.violations.join('; ')}`);
    console.log(`  replay: ${f.replay}`);
  }
  console.log(summaryLine(summary));
  if (args.verbose) console.log(`wall ${((Date.now() - started) / 1000).toFixed(1)} s`);
  process.exit(summary.violations > 0 ? 1 : 0);
}

void main();
