// Names and limits both ends of noded.abci.v1.Application agree on.
import type { ApplicationService } from '@noded/proto/src/gen/noded/abci/v1/abci.js';

/** The calls of the service, as the Application port names them ("finalizeBlock"). */
export type AbciMethod = keyof typeof ApplicationService;

/** The gRPC service name, as health checks and grpcurl name it. */
export const ABCI_SERVICE_NAME = 'noded.abci.v1.Application';

/**
 * Default gRPC message size limit, both ways. CometBFT caps block.max_bytes at 100 MiB, and a
 * FinalizeBlock or ProcessProposal request carries one block's transactions plus a few hundred bytes.
 */
export const DEFAULT_MAX_MESSAGE_BYTES = 128 * 1024 * 1024;

/** Trailer carrying an application error's `code` property (e.g. an ExecutionError's). */
export const ERROR_CODE_TRAILER = 'noded-error-code';
