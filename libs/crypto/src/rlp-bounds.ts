// The items of a canonical RLP list as offsets into its bytes, nothing copied or decoded: how the
// JSON-RPC thread finds the fields of a signed transaction (the fee fields it checks, the signing
// payload its sender is recovered from) without decoding the transaction. Here, beside the hashes
// and signatures, because both execution and the RPC read transactions with it.

/** Set by `readHeader`: where the item's payload starts and where the item ends. */
let payloadAt = 0;
let itemEnd = 0;

/**
 * Reads the RLP header at `pos` of an item that must end by `limit`: 1 for a list, 0 for a byte
 * string, -1 where @ethereumjs/rlp's decoder throws (a single byte below 0x80 given a prefix, a long
 * form for 55 bytes or fewer, a length with leading zeros, an end past `limit`). Sets payloadAt and
 * itemEnd.
 */
function readHeader(data: Uint8Array, pos: number, limit: number): number {
  if (pos >= limit) return -1;
  const b = data[pos];
  if (b < 0x80) {
    payloadAt = pos;
    itemEnd = pos + 1;
    return 0;
  }
  if (b <= 0xb7) {
    const len = b - 0x80;
    if (len === 1 && (pos + 1 >= limit || data[pos + 1] < 0x80)) return -1;
    payloadAt = pos + 1;
    itemEnd = payloadAt + len;
    return itemEnd <= limit ? 0 : -1;
  }
  if (b >= 0xc0 && b <= 0xf7) {
    payloadAt = pos + 1;
    itemEnd = payloadAt + (b - 0xc0);
    return itemEnd <= limit ? 1 : -1;
  }
  const list = b >= 0xc0;
  const lenOfLen = b - (list ? 0xf7 : 0xb7);
  if (pos + 1 + lenOfLen > limit || data[pos + 1] === 0) return -1;
  let len = 0;
  for (let i = 1; i <= lenOfLen; i++) len = len * 256 + data[pos + i];
  if (len < 56) return -1;
  payloadAt = pos + 1 + lenOfLen;
  itemEnd = payloadAt + len;
  return itemEnd <= limit ? (list ? 1 : 0) : -1;
}

/** Whether data[start..end) is a sequence of canonical RLP items, nested lists included. */
function canonicalItems(data: Uint8Array, start: number, end: number): boolean {
  for (let p = start; p < end; ) {
    const kind = readHeader(data, p, end);
    if (kind < 0) return false;
    const next = itemEnd;
    if (kind === 1 && !canonicalItems(data, payloadAt, next)) return false;
    p = next;
  }
  return true;
}

/**
 * The items of the RLP list that is the whole of `data`, as offsets into it, nothing copied or
 * decoded: item i's encoding starts at out[3i], its payload at out[3i + 1], and it ends at
 * out[3i + 2] (a list when data[out[3i]] >= 0xc0). Undefined wherever @ethereumjs/rlp's decode would throw, at
 * any depth, so an accepted encoding is canonical: a run of its items, re-encoded, is the same
 * bytes (a signing payload can be cut from a signed transaction instead of re-encoded).
 */
export function rlpListBounds(data: Uint8Array): number[] | undefined {
  if (readHeader(data, 0, data.length) !== 1 || itemEnd !== data.length) return undefined;
  const end = itemEnd;
  const out: number[] = [];
  for (let p = payloadAt; p < end; ) {
    const kind = readHeader(data, p, end);
    if (kind < 0) return undefined;
    const start = payloadAt;
    const next = itemEnd;
    if (kind === 1 && !canonicalItems(data, start, next)) return undefined;
    out.push(p, start, next);
    p = next;
  }
  return out;
}
