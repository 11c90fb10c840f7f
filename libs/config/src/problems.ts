// A problem found in an operator's file, in the one style every command prints:
//   app.toml: evm.max_gas_price: must be a decimal integer string, got "abc"

export interface ConfigProblem {
  /** File name as the operator knows it: "config.toml", "genesis.json", "priv_validator_key.json". */
  file: string;
  /** Dotted key path inside the file ("evm.gas.base_fee", "validators[0].power"); "" for the file. */
  key: string;
  /** The rule that was broken and the value that broke it. */
  message: string;
}

export function formatProblem(p: ConfigProblem): string {
  return p.key ? `${p.file}: ${p.key}: ${p.message}` : `${p.file}: ${p.message}`;
}

/** Thrown where a caller needs an exception instead of a list (the list is kept on the error). */
export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID';
  constructor(readonly problems: ConfigProblem[]) {
    super(problems.map(formatProblem).join('\n'));
    this.name = 'ConfigError';
  }
}

/** Renders any value the way messages quote it: strings in JSON quotes, tables and lists named. */
export function describeValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'bigint' || typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (v === null) return 'null';
  if (v === undefined) return 'nothing';
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v)) {
    try {
      return JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? x.toString() : x));
    } catch {
      return 'a list';
    }
  }
  return 'a table';
}
