// Parsers for the value shapes the config files use: Go-style durations, listen addresses,
// decimal integer strings, peer lists, BTC amounts. Each returns undefined (or a reason) on bad input;
// the schema turns that into a problem message.
import { isIPv4, isIPv6 } from 'node:net';

const DURATION_RE = /^(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+$/;
const DURATION_PART_RE = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g;
const NS_PER_UNIT: Record<string, number> = {
  ns: 1,
  us: 1e3,
  µs: 1e3,
  ms: 1e6,
  s: 1e9,
  m: 60e9,
  h: 3600e9,
};

/** Parses a Go duration ("1s", "500ms", "1m30s", "0") into milliseconds. */
export function parseDuration(text: string): number | undefined {
  if (text === '0') return 0;
  if (!DURATION_RE.test(text)) return undefined;
  let ns = 0;
  for (const m of text.matchAll(DURATION_PART_RE)) ns += Number(m[1]) * NS_PER_UNIT[m[2]!]!;
  return Number.isFinite(ns) ? ns / 1e6 : undefined;
}

/** Renders milliseconds back as the shortest Go duration string ("1m30s", "500ms"). */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  let rest = Math.round(ms);
  let out = '';
  for (const [unit, size] of [
    ['h', 3600_000],
    ['m', 60_000],
    ['s', 1000],
    ['ms', 1],
  ] as const) {
    const n = Math.floor(rest / size);
    if (n > 0) out += `${n}${unit}`;
    rest -= n * size;
  }
  return out;
}

export interface ListenAddress {
  /** The text as written in the file. */
  raw: string;
  /** Host or IP to bind; "0.0.0.0" when the file leaves the host empty (":26660"). */
  host: string;
  port: number;
}

const HOSTNAME_RE =
  /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** Why a host:port pair is bad, or the parsed address. */
export function parseHostPort(
  text: string,
  opts: { allowEmptyHost?: boolean } = {},
): { ok: true; host: string; port: number } | { ok: false; reason: 'shape' | 'port' } {
  let host: string;
  let portText: string;
  const v6 = /^\[([^\]]*)\]:([^:]*)$/.exec(text);
  if (v6) {
    host = v6[1]!;
    portText = v6[2]!;
    if (!isIPv6(host)) return { ok: false, reason: 'shape' };
  } else {
    const i = text.lastIndexOf(':');
    if (i < 0) return { ok: false, reason: 'shape' };
    host = text.slice(0, i);
    portText = text.slice(i + 1);
    if (host === '') {
      if (!opts.allowEmptyHost) return { ok: false, reason: 'shape' };
    } else if (!isIPv4(host) && !HOSTNAME_RE.test(host)) return { ok: false, reason: 'shape' };
  }
  if (!/^\d{1,5}$/.test(portText)) return { ok: false, reason: 'shape' };
  const port = Number(portText);
  if (port < 1 || port > 65535) return { ok: false, reason: 'port' };
  return { ok: true, host, port };
}

/** `tcp://host:port` or `host:port` (host may be empty: all interfaces). */
export function parseListenAddress(raw: string): ListenAddress | undefined {
  const r = checkListenAddress(raw);
  return typeof r === 'string' ? undefined : r;
}

/** The parsed address, or the reason it is not one (used verbatim in messages). */
export function checkListenAddress(raw: string): ListenAddress | string {
  const body = raw.startsWith('tcp://') ? raw.slice('tcp://'.length) : raw;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(body)) {
    return `must be a listen address "tcp://host:port" or "host:port" (only tcp is supported), got ${JSON.stringify(raw)}`;
  }
  const hp = parseHostPort(body, { allowEmptyHost: true });
  if (!hp.ok) {
    return hp.reason === 'port'
      ? `port must be between 1 and 65535, got ${JSON.stringify(raw)}`
      : `must be a listen address "tcp://host:port" or "host:port", got ${JSON.stringify(raw)}`;
  }
  return { raw, host: hp.host === '' ? '0.0.0.0' : hp.host, port: hp.port };
}

const UINT_RE = /^(?:0|[1-9]\d*)$/;
const INT_RE = /^-?(?:0|[1-9]\d*)$/;

/** A decimal integer string ("1000000000"); `signed` also admits a leading minus ("-1"). */
export function parseDecimalString(text: string, signed = false): bigint | undefined {
  return (signed ? INT_RE : UINT_RE).test(text) ? BigInt(text) : undefined;
}

const BTC_RE = /^(0|[1-9]\d*)(?:\.(\d{1,18}))?$/;

/** A decimal BTC amount ("1", "0.25") in base units (1 BTC = 10^18). */
export function parseBtcAmount(text: string): bigint | undefined {
  const m = BTC_RE.exec(text);
  if (!m) return undefined;
  return BigInt(m[1]!) * 10n ** 18n + BigInt((m[2] ?? '').padEnd(18, '0'));
}

export interface PeerAddress {
  /** Lower-case hex node id (40 characters). */
  nodeId: string;
  host: string;
  port: number;
}

const NODE_ID_RE = /^[0-9a-fA-F]{40}$/;

export function isNodeId(text: string): boolean {
  return NODE_ID_RE.test(text);
}

/** Splits a comma-separated list, trimming blanks; "" is the empty list. */
export function splitList(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** `<node_id>@<host>:<port>` entries, comma-separated; the reason for the first bad entry otherwise. */
export function checkPeerList(text: string): PeerAddress[] | string {
  const out: PeerAddress[] = [];
  for (const entry of splitList(text)) {
    const at = entry.indexOf('@');
    if (at < 0) {
      return `each peer must be "<node_id>@<host>:<port>" (the node id is missing), got ${JSON.stringify(entry)}`;
    }
    const id = entry.slice(0, at);
    if (!isNodeId(id)) {
      return `each peer's node id must be exactly 40 hex digits, got ${JSON.stringify(id)} in ${JSON.stringify(entry)}`;
    }
    const hp = parseHostPort(entry.slice(at + 1));
    if (!hp.ok) {
      return hp.reason === 'port'
        ? `port must be between 1 and 65535, got ${JSON.stringify(entry)}`
        : `each peer must be "<node_id>@<host>:<port>", got ${JSON.stringify(entry)}`;
    }
    out.push({ nodeId: id.toLowerCase(), host: hp.host, port: hp.port });
  }
  return out;
}

/** A node URL for clients: tcp://, http:// or https:// with host and port; returns the http(s) form. */
export function nodeHttpUrl(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (!['tcp:', 'http:', 'https:'].includes(url.protocol) || url.hostname === '') return undefined;
  if (url.protocol === 'tcp:') {
    if (url.port === '') return undefined;
    return `http://${url.host}`;
  }
  return url.href.replace(/\/$/, '');
}
