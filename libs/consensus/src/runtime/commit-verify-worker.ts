// The thread of CommitVerifier (commit-verifier.ts): checks the ed25519 signatures of commits that
// block sync received ahead of the height being applied, so that the main thread only looks the
// answers up. Each request is one commit with the public key expected at each index; the answer
// gives, for every signature present, the bytes that were signed (the precommit's sign bytes,
// computed here) and whether the signature is valid over them.
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { ed25519Verify } from '@noded/crypto';
import { commitSigVote } from '../block.js';
import { voteSignBytes } from '../codec/types.js';
import type { VerifyReply, VerifyRequest } from './commit-verifier.js';

const port = parentPort;
if (!port) throw new Error('commit-verify-worker runs as a worker thread only');
/** Answers go on the port CommitVerifier gave (it can take them synchronously), else the parent's. */
const replies: MessagePort = (workerData as { replies?: MessagePort } | null)?.replies ?? port;

port.on('message', (req: VerifyRequest) => {
  const out: VerifyReply = { id: req.id, items: [] };
  req.commit.signatures.forEach((s, i) => {
    const pk = req.pubKeys[i];
    if (s.blockIdFlag === 1 || !pk) return;
    const msg = voteSignBytes(req.chainId, commitSigVote(req.commit, i));
    out.items.push({ index: i, msg, ok: ed25519Verify(pk, msg, s.signature) });
  });
  replies.postMessage(out);
});
