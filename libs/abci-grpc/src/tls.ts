// Mutual TLS for the cluster's gRPC links (executor, state-store and their clients): both ends
// present a certificate signed by the same CA and check the other's against it. The PEM bytes come
// from files named in configuration; this lib reads no files.
import * as grpc from '@grpc/grpc-js';

/** PEM bytes of this end's certificate chain and private key, and of the CA that signs the peers. */
export interface GrpcTlsMaterial {
  cert: Buffer;
  key: Buffer;
  ca: Buffer;
}

/** Server side: TLS with this certificate, and every client must present one the CA signed. */
export function mutualTlsServerCredentials(m: GrpcTlsMaterial): grpc.ServerCredentials {
  return grpc.ServerCredentials.createSsl(m.ca, [{ cert_chain: m.cert, private_key: m.key }], true);
}

/** Client side: the server's certificate must be signed by the CA and name the host dialled. */
export function mutualTlsChannelCredentials(m: GrpcTlsMaterial): grpc.ChannelCredentials {
  return grpc.credentials.createSsl(m.ca, m.key, m.cert);
}
