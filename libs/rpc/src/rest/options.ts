// [api] of app.toml (seed §2.4), keys camelCase, durations in milliseconds.

export interface ApiOptions {
  /** Serve the REST API at all; false leaves the port closed. */
  enable: boolean;
  /** Serve the OpenAPI document at /swagger/ and /swagger.json. */
  swagger: boolean;
  /** Listen address, e.g. "tcp://0.0.0.0:1317" (the lead parses it and calls listen). */
  address: string;
  /** Simultaneous connections; excess connections are closed at once. 0 = unlimited. */
  maxOpenConnections: number;
  /** Time allowed to receive a whole request (headers and body). */
  rpcReadTimeoutMs: number;
  /** Time allowed to produce and send the whole response. */
  rpcWriteTimeoutMs: number;
  /** Largest request body accepted; larger ones get 413. */
  rpcMaxBodyBytes: number;
  /** PEM certificate; with tlsKeyFile the API is served over HTTPS. */
  tlsCertFile?: string;
  /** PEM private key of tlsCertFile. */
  tlsKeyFile?: string;
}

/** The seed's values (§2.4, §8). */
export const defaultApiOptions: ApiOptions = {
  enable: true,
  swagger: false,
  address: 'tcp://0.0.0.0:1317',
  maxOpenConnections: 1000,
  rpcReadTimeoutMs: 10_000,
  rpcWriteTimeoutMs: 10_000,
  rpcMaxBodyBytes: 1_000_000,
};

/** An [api] setting the REST server cannot run with. */
export class ApiConfigError extends Error {
  constructor(
    readonly code: 'API_TLS_INCOMPLETE' | 'API_DISABLED' | 'API_BAD_VALUE',
    message: string,
  ) {
    super(message);
    this.name = 'ApiConfigError';
  }
}

/** Checks the combination of keys the server depends on; throws ApiConfigError naming the key. */
export function validateApiOptions(o: ApiOptions): void {
  const cert = o.tlsCertFile ?? '';
  const key = o.tlsKeyFile ?? '';
  if ((cert === '') !== (key === '')) {
    const missing = cert === '' ? 'tls_cert_file' : 'tls_key_file';
    const given = cert === '' ? 'tls_key_file' : 'tls_cert_file';
    throw new ApiConfigError(
      'API_TLS_INCOMPLETE',
      `app.toml:api.${missing}: must be set when api.${given} is set (TLS needs both the certificate and its key)`,
    );
  }
  const nonNegative: Array<[string, number]> = [
    ['max_open_connections', o.maxOpenConnections],
    ['rpc_read_timeout', o.rpcReadTimeoutMs],
    ['rpc_write_timeout', o.rpcWriteTimeoutMs],
    ['rpc_max_body_bytes', o.rpcMaxBodyBytes],
  ];
  for (const [name, value] of nonNegative) {
    if (!Number.isFinite(value) || value < 0) {
      throw new ApiConfigError(
        'API_BAD_VALUE',
        `app.toml:api.${name}: ${value} must be a non-negative number`,
      );
    }
  }
}
