// [instrumentation] of config.toml, as CometBFT names it.

export interface InstrumentationOptions {
  /** Serve Prometheus metrics at all. */
  prometheus: boolean;
  /** Listen address of the metrics server, ":26660" (all interfaces) or "host:port". */
  prometheusListenAddr: string;
  /** Simultaneous connections to the metrics server; excess ones are closed. 0 = unlimited. */
  maxOpenConnections: number;
  /** Prefix of every CometBFT metric name ("cometbft" -> cometbft_consensus_height). */
  namespace: string;
}

export const defaultInstrumentationOptions: InstrumentationOptions = {
  prometheus: true,
  prometheusListenAddr: ':26660',
  maxOpenConnections: 3,
  namespace: 'cometbft',
};

/** An [instrumentation] value the metrics cannot run with. */
export class InstrumentationConfigError extends Error {
  readonly code = 'INSTRUMENTATION_CONFIG';
  constructor(message: string) {
    super(message);
    this.name = 'InstrumentationConfigError';
  }
}

/** Splits prometheus_listen_addr (":26660", "0.0.0.0:26660", "tcp://127.0.0.1:26660", "[::1]:26660"). */
export function parseListenAddr(addr: string): { host: string; port: number } {
  const text = addr.replace(/^tcp:\/\//, '');
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(text);
  const port = m ? Number(m[3]) : Number.NaN;
  if (!m || port > 65535) {
    throw new InstrumentationConfigError(
      `config.toml:instrumentation.prometheus_listen_addr: ${JSON.stringify(addr)} is not host:port (e.g. ":26660")`,
    );
  }
  return { host: m[1] ?? (m[2] === '' ? '0.0.0.0' : m[2]), port };
}
