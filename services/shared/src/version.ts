// The node's version, read once from package.json so `noded version`, /status and
// web3_clientVersion agree.
import { readFileSync } from 'node:fs';

function readVersion(): string {
  // Walk up from this file: it runs from dist/ (or a test's own outDir) and from the source tree.
  for (let rel = '../'; rel.length <= 3 * 8; rel += '../') {
    try {
      const pkg = JSON.parse(readFileSync(new URL(`${rel}package.json`, import.meta.url), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'noded' && pkg.version) return pkg.version;
    } catch {
      // try the next candidate (source tree vs dist/ tree)
    }
  }
  return '0.0.0';
}

export const NODED_VERSION = readVersion();
