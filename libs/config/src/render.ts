// Writing the three TOML files with a comment above every key (what `noded init` produces).
import { APP_TOML_DOCS, AppTomlFile } from './schema/app-toml.js';
import { CLIENT_TOML_DOCS, ClientTomlFile } from './schema/client-toml.js';
import { CONFIG_TOML_DOCS, ConfigTomlFile } from './schema/config-toml.js';
import { renderToml } from './schema/section.js';

/** Fresh default trees; edit their snake_case fields, then render them. */
export function defaultConfigTomlValues(): ConfigTomlFile {
  return new ConfigTomlFile();
}
export function defaultAppTomlValues(): AppTomlFile {
  return new AppTomlFile();
}
export function defaultClientTomlValues(): ClientTomlFile {
  return new ClientTomlFile();
}

const HEADER = (name: string, what: string) =>
  `${name}: ${what}\nWritten by \`noded init\`. Keys left out take their defaults; \`noded config validate\`\nchecks this file. Every key is described in docs/configuration.md.`;

export function renderConfigToml(values: ConfigTomlFile = defaultConfigTomlValues()): string {
  return renderToml(HEADER('config.toml', 'node configuration (CometBFT names)'), values, CONFIG_TOML_DOCS);
}

export function renderAppToml(values: AppTomlFile = defaultAppTomlValues()): string {
  return renderToml(
    HEADER('app.toml', 'application settings (REST API, EVM, pruning)'),
    values,
    APP_TOML_DOCS,
  );
}

export function renderClientToml(values: ClientTomlFile = defaultClientTomlValues()): string {
  return renderToml(HEADER('client.toml', 'settings of the client commands'), values, CLIENT_TOML_DOCS);
}
