// class-validator decorators for the value shapes of the TOML files. Each message names the rule and
// the value, because it is printed to the operator as is (`<file>: <key>: <message>`).
import { ValidateBy, type ValidationArguments } from 'class-validator';
import { describeValue } from '../problems.js';
import {
  checkListenAddress,
  checkPeerList,
  isNodeId,
  nodeHttpUrl,
  parseBtcAmount,
  parseDecimalString,
  parseDuration,
  parseHostPort,
  splitList,
} from '../values.js';

type Check = (value: unknown) => string | undefined;

/** Builds a decorator from a check that returns the failure message (undefined when fine). */
function rule(name: string, check: Check): PropertyDecorator {
  return ValidateBy({
    name,
    validator: {
      validate: (value: unknown) => check(value) === undefined,
      defaultMessage: (args?: ValidationArguments) => check(args?.value) ?? 'is invalid',
    },
  });
}

const got = (v: unknown) => `got ${describeValue(v)}`;

export function IsText(
  opts: { nonEmpty?: boolean; pattern?: RegExp; patternText?: string } = {},
): PropertyDecorator {
  return rule('isText', (v) => {
    if (typeof v !== 'string') return `must be a string, ${got(v)}`;
    if (opts.nonEmpty && v.trim() === '') return `must not be empty, ${got(v)}`;
    if (opts.pattern && !opts.pattern.test(v)) return `must be ${opts.patternText}, ${got(v)}`;
    return undefined;
  });
}

export function IsBool(): PropertyDecorator {
  return rule('isBool', (v) => (typeof v === 'boolean' ? undefined : `must be true or false, ${got(v)}`));
}

/** A TOML integer in [min, max]. */
export function IsInt(min: number, max: number = Number.MAX_SAFE_INTEGER): PropertyDecorator {
  const range =
    max === Number.MAX_SAFE_INTEGER ? `an integer >= ${min}` : `an integer between ${min} and ${max}`;
  return rule('isInt', (v) => {
    if (typeof v === 'bigint') return `must be ${range}, ${got(v)}`;
    if (typeof v !== 'number' || !Number.isInteger(v)) return `must be an integer, ${got(v)}`;
    return v < min || v > max ? `must be ${range}, ${got(v)}` : undefined;
  });
}

/** A TOML integer that the typed config holds as bigint (gas amounts beyond 2^53 are fine). */
export function IsBigInt(min: bigint): PropertyDecorator {
  return rule('isBigInt', (v) => {
    if (typeof v !== 'bigint' && (typeof v !== 'number' || !Number.isInteger(v)))
      return `must be an integer, ${got(v)}`;
    return BigInt(v) < min ? `must be an integer >= ${min}, ${got(v)}` : undefined;
  });
}

/** An integer held in a string ("1000000000"), as the seed writes gas prices. */
export function IsDecimalString(min = 0n, max?: bigint): PropertyDecorator {
  return rule('isDecimalString', (v) => {
    const n = typeof v === 'string' ? parseDecimalString(v) : undefined;
    if (n === undefined) return `must be a decimal integer string, ${got(v)}`;
    if (n < min || (max !== undefined && n > max)) {
      const range = max === undefined ? `>= ${min}` : `between ${min} and ${max}`;
      return `must be ${range}, ${got(v)}`;
    }
    return undefined;
  });
}

export function IsDuration(minMs = 0): PropertyDecorator {
  return rule('isDuration', (v) => {
    const ms = typeof v === 'string' ? parseDuration(v) : undefined;
    if (ms === undefined) return `must be a duration string such as "1s", "500ms" or "1m30s", ${got(v)}`;
    return ms < minMs ? `must be at least ${minMs}ms, ${got(v)}` : undefined;
  });
}

export function IsListenAddress(): PropertyDecorator {
  return rule('isListenAddress', (v) => {
    if (typeof v !== 'string')
      return `must be a listen address string "tcp://host:port" or "host:port", ${got(v)}`;
    const r = checkListenAddress(v);
    return typeof r === 'string' ? r : undefined;
  });
}

/** "" or host:port (an address other peers can dial). */
export function IsExternalAddress(): PropertyDecorator {
  return rule('isExternalAddress', (v) => {
    if (typeof v !== 'string') return `must be a string "host:port" or "", ${got(v)}`;
    if (v === '') return undefined;
    const body = v.startsWith('tcp://') ? v.slice(6) : v;
    const hp = parseHostPort(body);
    if (!hp.ok) return `must be "" or "host:port" with a port between 1 and 65535, ${got(v)}`;
    if (hp.host === '0.0.0.0' || hp.host === '::')
      return `must be an address peers can dial, not the wildcard ${hp.host}, ${got(v)}`;
    return undefined;
  });
}

export function IsOneOf(values: readonly string[]): PropertyDecorator {
  const list = values.map((s) => JSON.stringify(s)).join(', ');
  return rule('isOneOf', (v) =>
    typeof v === 'string' && values.includes(v) ? undefined : `must be one of ${list}, ${got(v)}`,
  );
}

export function IsTextList(): PropertyDecorator {
  return rule('isTextList', (v) =>
    Array.isArray(v) && v.every((x) => typeof x === 'string')
      ? undefined
      : `must be a list of strings such as ["*"], ${got(v)}`,
  );
}

/** Comma-separated `<node_id>@<host>:<port>`; "" for none. */
export function IsPeerList(): PropertyDecorator {
  return rule('isPeerList', (v) => {
    if (typeof v !== 'string')
      return `must be a comma-separated string of "<node_id>@<host>:<port>", ${got(v)}`;
    const r = checkPeerList(v);
    return typeof r === 'string' ? r : undefined;
  });
}

/** Comma-separated node ids; "" for none. */
export function IsNodeIdList(): PropertyDecorator {
  return rule('isNodeIdList', (v) => {
    if (typeof v !== 'string') return `must be a comma-separated string of node ids, ${got(v)}`;
    const bad = splitList(v).find((id) => !isNodeId(id));
    return bad === undefined
      ? undefined
      : `each entry must be a node id of exactly 40 hex digits, got ${JSON.stringify(bad)}`;
  });
}

/** Comma-separated names, each from `allowed`. */
export function IsNameList(allowed: readonly string[]): PropertyDecorator {
  return rule('isNameList', (v) => {
    if (typeof v !== 'string') return `must be a comma-separated string, ${got(v)}`;
    const names = splitList(v);
    const bad = names.find((n) => !allowed.includes(n));
    if (bad !== undefined)
      return `each entry must be one of ${allowed.join(', ')}, got ${JSON.stringify(bad)} in ${JSON.stringify(v)}`;
    return undefined;
  });
}

export function IsBtcAmount(): PropertyDecorator {
  return rule('isBtcAmount', (v) =>
    typeof v === 'string' && parseBtcAmount(v) !== undefined
      ? undefined
      : `must be a decimal BTC amount string with at most 18 decimals such as "1" or "0.5", ${got(v)}`,
  );
}

export function IsNodeUrl(): PropertyDecorator {
  return rule('isNodeUrl', (v) =>
    typeof v === 'string' && nodeHttpUrl(v) !== undefined
      ? undefined
      : `must be a node URL such as "tcp://localhost:26657" or "https://rpc.example.org", ${got(v)}`,
  );
}
