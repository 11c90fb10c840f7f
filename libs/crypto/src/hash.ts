import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
// The `keccak` package loads its prebuilt native binding (about 3x @noble on short inputs).
const createKeccak = require('keccak') as (alg: 'keccak256') => {
  update(data: Buffer): { digest(): Buffer };
};

export function sha256(data: Uint8Array): Uint8Array {
  return new Uint8Array(createHash('sha256').update(data).digest());
}

export function keccak256(data: Uint8Array): Uint8Array {
  const buf = Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return new Uint8Array(createKeccak('keccak256').update(buf).digest());
}
