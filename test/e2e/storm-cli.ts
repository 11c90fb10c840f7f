// `npm run storm -- --kills 100 [--seed N]`: the long kill -9 storm, printing each kill and a summary.
import { runStorm } from './storm.js';

const args = process.argv.slice(2);
const opt = (name: string, def: number): number => {
  const i = args.indexOf(name);
  if (i < 0) return def;
  const v = Number(args[i + 1]);
  if (!Number.isInteger(v) || v < 1) {
    console.error(`storm: ${name} needs a positive integer, got ${args[i + 1]}`);
    process.exit(2);
  }
  return v;
};
const kills = opt('--kills', 100);
const seed = opt('--seed', 1);
const report = await runStorm({ kills, seed, log: (l) => console.log(`[storm] ${l}`) });
console.log(JSON.stringify(report, null, 2));
