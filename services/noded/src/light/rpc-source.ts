// Light blocks from CometBFT RPC servers ([light] rpc_servers): /commit gives the signed header,
// /validators (paged) the validator sets of the height and of the next one. A server is a source
// like a peer: what it answers is verified by the light client, never trusted. A server that sent
// data no honest node sends is left out for a while (it cannot be disconnected).
import type { FetchedLightBlock } from '@noded/consensus';
import { commitFromJson, headerFromJson, validatorFromJson } from '@noded/rpc';
import type { Logger, Validator } from '@noded/types';

const PREFIX = 'rpc:';
/** How long a server that sent a refused light block is not asked. */
export const RPC_SUSPEND_MS = 60_000;
const PER_PAGE = 100;
const MAX_PAGES = 100;

export class RpcLightSources {
  private readonly suspended = new Map<string, number>();

  constructor(
    private readonly urls: string[],
    private readonly logger: Logger,
    private readonly timeoutMs = 5000,
  ) {}

  /** Source names of the servers not suspended now. */
  names(): string[] {
    const now = Date.now();
    return this.urls.filter((u) => (this.suspended.get(u) ?? 0) <= now).map((u) => `${PREFIX}${u}`);
  }

  owns(source: string): boolean {
    return source.startsWith(PREFIX);
  }

  suspend(source: string, reason: string): void {
    const url = source.slice(PREFIX.length);
    this.suspended.set(url, Date.now() + RPC_SUSPEND_MS);
    this.logger.warn({ server: url, reason, seconds: RPC_SUSPEND_MS / 1000 }, 'RPC server left out');
  }

  private async get(url: string, path: string): Promise<unknown> {
    let res: Response;
    try {
      res = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (err) {
      throw new Error(`${url}${path}: ${(err as Error).message}`);
    }
    let json: { result?: unknown; error?: { message?: string; data?: string } };
    try {
      json = (await res.json()) as typeof json;
    } catch {
      throw new Error(`${url}${path}: HTTP ${res.status}, not JSON`);
    }
    if (json.error || json.result === undefined) {
      throw new Error(`${url}${path}: ${json.error?.data ?? json.error?.message ?? 'no result'}`);
    }
    return json.result;
  }

  private async validatorsAt(url: string, height: number): Promise<Validator[]> {
    const out: Validator[] = [];
    for (let page = 1; page <= MAX_PAGES; page++) {
      const r = (await this.get(url, `/validators?height=${height}&page=${page}&per_page=${PER_PAGE}`)) as {
        validators?: unknown;
        total?: unknown;
      };
      if (!Array.isArray(r.validators)) throw new Error(`${url}/validators: no validator list`);
      r.validators.forEach((v, i) => {
        out.push(validatorFromJson(v, `validators[${out.length + i}]`));
      });
      const total = Number(r.total);
      if (!Number.isSafeInteger(total) || total < 0)
        throw new Error(`${url}/validators: total ${String(r.total)}`);
      if (out.length >= total || r.validators.length === 0) return out;
    }
    throw new Error(`${url}/validators: more than ${MAX_PAGES * PER_PAGE} validators`);
  }

  async fetch(source: string, height: number | 'latest'): Promise<FetchedLightBlock> {
    const url = source.slice(PREFIX.length);
    const r = (await this.get(url, height === 'latest' ? '/commit' : `/commit?height=${height}`)) as {
      signed_header?: { header?: unknown; commit?: unknown };
    };
    if (!r.signed_header) throw new Error(`${url}/commit: no signed_header`);
    const header = headerFromJson(r.signed_header.header, 'signed_header.header');
    const commit = commitFromJson(r.signed_header.commit, 'signed_header.commit');
    if (height !== 'latest' && header.height !== height) {
      throw new Error(`${url}/commit: asked for height ${height}, got ${header.height}`);
    }
    const [validators, nextValidators] = await Promise.all([
      this.validatorsAt(url, header.height),
      this.validatorsAt(url, header.height + 1).catch(() => undefined),
    ]);
    return { block: { header, commit, validators }, nextValidators };
  }
}
