#!/usr/bin/env node
// `npm run proto:check` (part of `npm run lint`): the lint and the breaking-change check of the gRPC
// contracts in libs/proto/proto/ (issue 22, "a lint and a breaking-change check run in CI";
// docs/cluster.md "Versioning rule"). Pure JavaScript, so CI needs neither buf nor protoc.
//
//   node scripts/proto-check.mjs [--proto-dir DIR] [--baseline FILE] [--write-baseline [--allow-breaking]]
//
// 1. Parse: every .proto under DIR (default libs/proto/proto) with a small proto3 parser that knows
//    the grammar these files use (syntax, package, import, option, message, nested message and enum,
//    field, map, oneof, reserved, enum, service, rpc with stream); anything else (proto2, groups,
//    extensions, extend) is refused naming file:line, never skipped.
// 2. Lint (rules named as buf's STANDARD category names them): PACKAGE_VERSION_SUFFIX,
//    PACKAGE_DIRECTORY_MATCH, MESSAGE_PASCAL_CASE, ENUM_PASCAL_CASE, SERVICE_PASCAL_CASE,
//    RPC_PASCAL_CASE, FIELD_LOWER_SNAKE_CASE, ONEOF_LOWER_SNAKE_CASE, ENUM_VALUE_UPPER_SNAKE_CASE,
//    ENUM_VALUE_PREFIX, ENUM_ZERO_VALUE_SUFFIX (_UNSPECIFIED, or _UNKNOWN as four v1 enums already
//    named theirs: renaming them would change the generated code and the JSON names),
//    RPC_REQUEST_STANDARD_NAME, RPC_RESPONSE_STANDARD_NAME, RPC_REQUEST_RESPONSE_UNIQUE,
//    FIELD_NO_RESERVED_RANGE (19000-19999, protobuf's own), FIELD_NUMBER_RANGE, FIELD_NUMBER_UNIQUE,
//    FIELD_NAME_UNIQUE, FIELD_NOT_RESERVED, ENUM_VALUE_NUMBER_UNIQUE, ENUM_VALUE_NAME_UNIQUE,
//    ENUM_VALUE_NOT_RESERVED, ENUM_FIRST_VALUE_ZERO,
//    TYPE_KNOWN (a field or rpc type that names no message or enum). LINT_IGNORE below lists the
//    exceptions, as buf.yaml's ignore_only would.
// 3. Breaking: the files against the committed baseline (default libs/proto/baseline.json: per
//    package its messages with fields, oneofs and reserved numbers and names, enums with values and
//    reserved, services with rpcs). Refused: a package, message, enum, service or rpc removed; a field
//    or enum value removed without `reserved` of its number and name; a field's name, type, label or
//    oneof changed; an enum value renamed; a reserved number or name dropped; an rpc's request,
//    response or streaming changed. Additions pass, but the baseline must then be rewritten
//    (--write-baseline) and committed with them, so that a later removal of what was added is seen:
//    a baseline that lacks something the files have fails too.
// 4. --write-baseline: writes the baseline from the files, only when they pass the lint and do not
//    break the old baseline. --allow-breaking writes it anyway: only to retire a whole old package
//    version (noded.x.v1 once noded.x.v2 has replaced it everywhere), never for a change in place.
//
// Exit 0 when clean; 1 with one line per finding on stderr ("file:line: RULE: message"); 2 on a bad
// command line or a file it cannot parse.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Lint exceptions, as buf.yaml's `ignore_only`: rule -> files (relative to the proto directory) or
 * elements (fully qualified rpc names) it does not apply to. Each with why.
 */
const LINT_IGNORE = {
  // grpc/health/v1/health.proto is the standard gRPC health protocol copied verbatim (probes and load
  // balancers speak it as it is): its enum values are unprefixed and Check/Watch share one request.
  ENUM_VALUE_PREFIX: ['grpc/health/v1/health.proto'],
  ENUM_ZERO_VALUE_SUFFIX: ['grpc/health/v1/health.proto'],
  RPC_REQUEST_STANDARD_NAME: ['grpc/health/v1/health.proto'],
  RPC_RESPONSE_STANDARD_NAME: [
    'grpc/health/v1/health.proto',
    // v1 rpcs named before this check: their responses are named for what they carry. A rename is
    // not a wire change but it changes the generated code every client imports; noded.state.v2 and
    // noded.p2p.v2 would use the standard names.
    'noded.state.v1.StateReader.Head',
    'noded.p2p.v1.Gateway.Relay',
  ],
  RPC_REQUEST_RESPONSE_UNIQUE: ['grpc/health/v1/health.proto'],
};

const SCALARS = new Set([
  'double',
  'float',
  'int32',
  'int64',
  'uint32',
  'uint64',
  'sint32',
  'sint64',
  'fixed32',
  'fixed64',
  'sfixed32',
  'sfixed64',
  'bool',
  'string',
  'bytes',
]);

/** The messages and enums of the well-known type files an import can name. */
const WELL_KNOWN = {
  'google/protobuf/timestamp.proto': ['google.protobuf.Timestamp'],
  'google/protobuf/duration.proto': ['google.protobuf.Duration'],
  'google/protobuf/empty.proto': ['google.protobuf.Empty'],
  'google/protobuf/any.proto': ['google.protobuf.Any'],
  'google/protobuf/field_mask.proto': ['google.protobuf.FieldMask'],
  'google/protobuf/struct.proto': [
    'google.protobuf.Struct',
    'google.protobuf.Value',
    'google.protobuf.ListValue',
    'google.protobuf.NullValue',
  ],
  'google/protobuf/wrappers.proto': [
    'google.protobuf.DoubleValue',
    'google.protobuf.FloatValue',
    'google.protobuf.Int64Value',
    'google.protobuf.UInt64Value',
    'google.protobuf.Int32Value',
    'google.protobuf.UInt32Value',
    'google.protobuf.BoolValue',
    'google.protobuf.StringValue',
    'google.protobuf.BytesValue',
  ],
};

const FIELD_MAX = 536870911;

export class ProtoSyntaxError extends Error {
  constructor(file, line, message) {
    super(`${file}:${line}: PARSE: ${message}`);
    this.name = 'ProtoSyntaxError';
  }
}

// ---------------------------------------------------------------------------------------------
// Parsing

function tokenize(text, file) {
  const tokens = [];
  let i = 0;
  let line = 1;
  while (i < text.length) {
    const c = text[i];
    if (c === '\n') {
      line++;
      i++;
    } else if (c === ' ' || c === '\t' || c === '\r') {
      i++;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      if (end < 0) throw new ProtoSyntaxError(file, line, 'unterminated /* comment');
      for (let j = i; j < end; j++) if (text[j] === '\n') line++;
      i = end + 2;
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      let value = '';
      while (j < text.length && text[j] !== c) {
        if (text[j] === '\n') throw new ProtoSyntaxError(file, line, 'unterminated string');
        if (text[j] === '\\') j++;
        value += text[j];
        j++;
      }
      if (j >= text.length) throw new ProtoSyntaxError(file, line, 'unterminated string');
      tokens.push({ kind: 'string', value, line });
      i = j + 1;
    } else if (/[A-Za-z_.]/.test(c)) {
      let j = i;
      while (j < text.length && /[A-Za-z0-9_.]/.test(text[j])) j++;
      tokens.push({ kind: 'ident', value: text.slice(i, j), line });
      i = j;
    } else if (/[0-9-]/.test(c)) {
      let j = i + 1;
      while (j < text.length && /[0-9A-Za-z.+]/.test(text[j])) j++;
      tokens.push({ kind: 'number', value: text.slice(i, j), line });
      i = j;
    } else if ('{}[]()<>;=,:'.includes(c)) {
      tokens.push({ kind: 'symbol', value: c, line });
      i++;
    } else {
      throw new ProtoSyntaxError(file, line, `unexpected character "${c}"`);
    }
  }
  return tokens;
}

class Parser {
  constructor(text, file) {
    this.file = file;
    this.tokens = tokenize(text, file);
    this.pos = 0;
  }
  peek() {
    return this.tokens[this.pos];
  }
  line() {
    return (this.peek() ?? this.tokens[this.tokens.length - 1] ?? { line: 1 }).line;
  }
  fail(message) {
    throw new ProtoSyntaxError(this.file, this.line(), message);
  }
  next() {
    const t = this.tokens[this.pos++];
    if (!t) this.fail('unexpected end of file');
    return t;
  }
  is(value) {
    return this.peek()?.value === value && this.peek()?.kind !== 'string';
  }
  expect(value) {
    const t = this.next();
    if (t.value !== value || t.kind === 'string') {
      this.pos--;
      this.fail(`expected "${value}", found "${t.value}"`);
    }
    return t;
  }
  ident(what) {
    const t = this.next();
    if (t.kind !== 'ident') {
      this.pos--;
      this.fail(`expected ${what}, found "${t.value}"`);
    }
    return t;
  }
  int(what) {
    const t = this.next();
    if (t.kind !== 'number' || !/^-?(0|[1-9][0-9]*|0[xX][0-9a-fA-F]+|0[0-7]+)$/.test(t.value)) {
      this.pos--;
      this.fail(`expected ${what} (an integer), found "${t.value}"`);
    }
    const neg = t.value.startsWith('-');
    const digits = neg ? t.value.slice(1) : t.value;
    const n = /^0[0-7]+$/.test(digits) ? Number.parseInt(digits, 8) : Number(digits);
    return neg ? -n : n;
  }
  /** Skips a balanced [...] or {...} starting at the current token. */
  skipBalanced(open, close) {
    this.expect(open);
    let depth = 1;
    while (depth > 0) {
      const t = this.next();
      if (t.kind === 'symbol' && t.value === open) depth++;
      else if (t.kind === 'symbol' && t.value === close) depth--;
    }
  }
  /** `option name = value;`, value possibly an aggregate {...}. */
  skipOption() {
    this.expect('option');
    while (!this.is(';')) {
      if (this.is('{')) this.skipBalanced('{', '}');
      else this.next();
    }
    this.expect(';');
  }

  parseFile() {
    const file = {
      path: this.file,
      syntax: null,
      package: null,
      packageLine: 1,
      imports: [],
      messages: [],
      enums: [],
      services: [],
    };
    while (this.peek()) {
      const t = this.peek();
      if (this.is(';')) this.next();
      else if (this.is('syntax')) {
        this.next();
        this.expect('=');
        const s = this.next();
        if (s.kind !== 'string') this.fail('syntax must be a string');
        if (s.value !== 'proto3') this.fail(`syntax "${s.value}" is not supported: the contracts are proto3`);
        file.syntax = s.value;
        this.expect(';');
      } else if (this.is('package')) {
        this.next();
        if (file.package !== null) this.fail('a second package statement');
        file.packageLine = t.line;
        file.package = this.ident('a package name').value;
        this.expect(';');
      } else if (this.is('import')) {
        this.next();
        if (this.is('public') || this.is('weak')) this.next();
        const s = this.next();
        if (s.kind !== 'string') this.fail('import needs a file name string');
        file.imports.push(s.value);
        this.expect(';');
      } else if (this.is('option')) this.skipOption();
      else if (this.is('message')) file.messages.push(this.parseMessage());
      else if (this.is('enum')) file.enums.push(this.parseEnum());
      else if (this.is('service')) file.services.push(this.parseService());
      else this.fail(`unexpected "${t.value}" at the top level (extend and proto2 are not supported)`);
    }
    if (file.syntax === null) throw new ProtoSyntaxError(this.file, 1, 'no `syntax = "proto3";`');
    if (file.package === null) throw new ProtoSyntaxError(this.file, 1, 'no package statement');
    return file;
  }

  parseReserved(into) {
    const line = this.expect('reserved').line;
    for (;;) {
      const t = this.peek();
      if (t?.kind === 'string') {
        this.next();
        into.names.push({ name: t.value, line });
      } else {
        const from = this.int('a reserved number');
        let to = from;
        if (this.is('to')) {
          this.next();
          if (this.is('max')) {
            this.next();
            to = FIELD_MAX;
          } else to = this.int('the end of a reserved range');
        }
        into.ranges.push({ from, to, line });
      }
      if (this.is(',')) this.next();
      else break;
    }
    this.expect(';');
  }

  parseFieldOptions() {
    if (this.is('[')) this.skipBalanced('[', ']');
    this.expect(';');
  }

  parseField(msg, oneof) {
    const line = this.line();
    let label = '';
    if (this.is('repeated') || this.is('optional')) {
      if (oneof) this.fail(`a oneof field cannot be ${this.peek().value}`);
      label = this.next().value;
    } else if (this.is('required')) this.fail('required is proto2, not proto3');
    let type;
    if (this.is('map')) {
      if (oneof) this.fail('a oneof cannot hold a map');
      if (label) this.fail('a map field takes no label');
      this.next();
      this.expect('<');
      const key = this.ident('a map key type').value;
      this.expect(',');
      const value = this.ident('a map value type').value;
      this.expect('>');
      label = 'map';
      type = { key, value };
    } else if (this.is('group')) this.fail('groups are not supported');
    else type = this.ident('a field type').value;
    const name = this.ident('a field name').value;
    this.expect('=');
    const number = this.int('a field number');
    this.parseFieldOptions();
    msg.fields.push({ name, number, type, label, oneof: oneof ?? '', line });
  }

  parseMessage() {
    const line = this.expect('message').line;
    const name = this.ident('a message name').value;
    const msg = {
      name,
      line,
      fields: [],
      oneofs: [],
      reserved: { ranges: [], names: [] },
      messages: [],
      enums: [],
    };
    this.expect('{');
    while (!this.is('}')) {
      if (this.is(';')) this.next();
      else if (this.is('option')) this.skipOption();
      else if (this.is('reserved')) this.parseReserved(msg.reserved);
      else if (this.is('message')) msg.messages.push(this.parseMessage());
      else if (this.is('enum')) msg.enums.push(this.parseEnum());
      else if (this.is('extensions') || this.is('extend')) this.fail(`${this.peek().value} is not supported`);
      else if (this.is('oneof')) {
        const oLine = this.next().line;
        const oName = this.ident('a oneof name').value;
        msg.oneofs.push({ name: oName, line: oLine });
        this.expect('{');
        while (!this.is('}')) {
          if (this.is(';')) this.next();
          else if (this.is('option')) this.skipOption();
          else this.parseField(msg, oName);
        }
        this.expect('}');
      } else this.parseField(msg, null);
    }
    this.expect('}');
    return msg;
  }

  parseEnum() {
    const line = this.expect('enum').line;
    const name = this.ident('an enum name').value;
    const en = { name, line, values: [], reserved: { ranges: [], names: [] } };
    this.expect('{');
    while (!this.is('}')) {
      if (this.is(';')) this.next();
      else if (this.is('option')) this.skipOption();
      else if (this.is('reserved')) this.parseReserved(en.reserved);
      else {
        const t = this.ident('an enum value name');
        this.expect('=');
        const number = this.int('an enum value number');
        this.parseFieldOptions();
        en.values.push({ name: t.value, number, line: t.line });
      }
    }
    this.expect('}');
    return en;
  }

  parseService() {
    const line = this.expect('service').line;
    const name = this.ident('a service name').value;
    const svc = { name, line, rpcs: [] };
    this.expect('{');
    while (!this.is('}')) {
      if (this.is(';')) this.next();
      else if (this.is('option')) this.skipOption();
      else {
        const rLine = this.expect('rpc').line;
        const rName = this.ident('an rpc name').value;
        const side = () => {
          this.expect('(');
          const streaming = this.is('stream') && this.tokens[this.pos + 1]?.kind === 'ident';
          if (streaming) this.next();
          const type = this.ident('a message type').value;
          this.expect(')');
          return { type, streaming };
        };
        const req = side();
        this.expect('returns');
        const res = side();
        if (this.is('{')) this.skipBalanced('{', '}');
        else this.expect(';');
        svc.rpcs.push({
          name: rName,
          line: rLine,
          request: req.type,
          requestStreaming: req.streaming,
          response: res.type,
          responseStreaming: res.streaming,
        });
      }
    }
    this.expect('}');
    return svc;
  }
}

export function parseProto(text, file) {
  return new Parser(text, file).parseFile();
}

// ---------------------------------------------------------------------------------------------
// Model: fully qualified names and resolved types

/** Every message and enum of the files (and of the well-known imports), by fully qualified name. */
function declaredTypes(files) {
  const types = new Map();
  for (const f of files) {
    for (const imp of f.imports) for (const n of WELL_KNOWN[imp] ?? []) types.set(n, 'wellknown');
    const walk = (prefix, msgs, enums) => {
      for (const e of enums) types.set(`${prefix}.${e.name}`, 'enum');
      for (const m of msgs) {
        types.set(`${prefix}.${m.name}`, 'message');
        walk(`${prefix}.${m.name}`, m.messages, m.enums);
      }
    };
    walk(f.package, f.messages, f.enums);
  }
  return types;
}

/** protobuf's scoping: a relative name is looked up from the innermost scope outwards. */
function resolveType(name, scope, types) {
  if (SCALARS.has(name)) return name;
  if (name.startsWith('.')) return types.has(name.slice(1)) ? name.slice(1) : null;
  const parts = scope.split('.');
  for (let i = parts.length; i >= 0; i--) {
    const candidate = [...parts.slice(0, i), name].join('.');
    if (types.has(candidate)) return candidate;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Lint

const PASCAL = /^[A-Z][A-Za-z0-9]*$/;
const LOWER_SNAKE = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;
const UPPER_SNAKE = /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/;

/** BlockIDFlag -> BLOCK_ID_FLAG, CheckTxType -> CHECK_TX_TYPE (buf's enum value prefix). */
export function upperSnake(name) {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z])([A-Z][a-z])/g, '$1_$2')
    .toUpperCase();
}

function ignored(rule, file, element) {
  const list = LINT_IGNORE[rule] ?? [];
  return list.includes(file) || (element !== undefined && list.includes(element));
}

function inRanges(number, ranges) {
  return ranges.some((r) => number >= r.from && number <= r.to);
}

export function lint(files) {
  const findings = [];
  const types = declaredTypes(files);
  const add = (file, line, rule, message, element) => {
    if (!ignored(rule, file, element)) findings.push({ file, line, rule, message });
  };
  for (const f of files) {
    const p = f.path;
    const pkgParts = f.package.split('.');
    if (!/^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/.test(pkgParts[pkgParts.length - 1]))
      add(
        p,
        f.packageLine,
        'PACKAGE_VERSION_SUFFIX',
        `package ${f.package} must end in a version (noded.<area>.v1)`,
      );
    const dir = dirname(p).split('/').join('.');
    if (dir !== f.package)
      add(
        p,
        f.packageLine,
        'PACKAGE_DIRECTORY_MATCH',
        `package ${f.package} must be in directory ${f.package.split('.').join('/')}/, not ${dirname(p)}/`,
      );

    const checkEnum = (en, fq) => {
      if (!PASCAL.test(en.name)) add(p, en.line, 'ENUM_PASCAL_CASE', `enum ${fq} must be PascalCase`);
      const prefix = `${upperSnake(en.name)}_`;
      const numbers = new Map();
      const names = new Map();
      for (const v of en.values) {
        if (!UPPER_SNAKE.test(v.name))
          add(
            p,
            v.line,
            'ENUM_VALUE_UPPER_SNAKE_CASE',
            `enum value ${fq}.${v.name} must be UPPER_SNAKE_CASE`,
          );
        if (!v.name.startsWith(prefix))
          add(p, v.line, 'ENUM_VALUE_PREFIX', `enum value ${fq}.${v.name} must start with ${prefix}`);
        if (numbers.has(v.number))
          add(
            p,
            v.line,
            'ENUM_VALUE_NUMBER_UNIQUE',
            `enum value ${fq}.${v.name} reuses number ${v.number} of ${numbers.get(v.number)}`,
          );
        if (names.has(v.name))
          add(p, v.line, 'ENUM_VALUE_NAME_UNIQUE', `enum ${fq} declares ${v.name} twice`);
        if (inRanges(v.number, en.reserved.ranges) || en.reserved.names.some((r) => r.name === v.name))
          add(
            p,
            v.line,
            'ENUM_VALUE_NOT_RESERVED',
            `enum value ${fq}.${v.name} = ${v.number} uses a reserved number or name of ${fq}`,
          );
        numbers.set(v.number, v.name);
        names.set(v.name, v.number);
      }
      const zero = en.values[0];
      if (zero?.number !== 0)
        add(p, en.line, 'ENUM_FIRST_VALUE_ZERO', `enum ${fq}: its first value must be 0 (proto3)`);
      else if (zero.name !== `${prefix}UNSPECIFIED` && zero.name !== `${prefix}UNKNOWN`)
        add(
          p,
          zero.line,
          'ENUM_ZERO_VALUE_SUFFIX',
          `enum value ${fq}.${zero.name} = 0 must be ${prefix}UNSPECIFIED (or ${prefix}UNKNOWN)`,
        );
    };

    const checkMessage = (m, fq) => {
      if (!PASCAL.test(m.name)) add(p, m.line, 'MESSAGE_PASCAL_CASE', `message ${fq} must be PascalCase`);
      for (const o of m.oneofs)
        if (!LOWER_SNAKE.test(o.name))
          add(p, o.line, 'ONEOF_LOWER_SNAKE_CASE', `oneof ${fq}.${o.name} must be lower_snake_case`);
      const numbers = new Map();
      const names = new Map();
      for (const fl of m.fields) {
        const where = `field ${fq}.${fl.name} = ${fl.number}`;
        if (!LOWER_SNAKE.test(fl.name))
          add(p, fl.line, 'FIELD_LOWER_SNAKE_CASE', `${where}: the name must be lower_snake_case`);
        if (fl.number < 1 || fl.number > FIELD_MAX)
          add(p, fl.line, 'FIELD_NUMBER_RANGE', `${where}: numbers run from 1 to ${FIELD_MAX}`);
        if (fl.number >= 19000 && fl.number <= 19999)
          add(p, fl.line, 'FIELD_NO_RESERVED_RANGE', `${where}: 19000-19999 are reserved by protobuf itself`);
        if (numbers.has(fl.number))
          add(
            p,
            fl.line,
            'FIELD_NUMBER_UNIQUE',
            `${where}: number ${fl.number} is already field "${numbers.get(fl.number)}"`,
          );
        if (names.has(fl.name))
          add(
            p,
            fl.line,
            'FIELD_NAME_UNIQUE',
            `${where}: name "${fl.name}" is already field ${names.get(fl.name)}`,
          );
        if (inRanges(fl.number, m.reserved.ranges))
          add(p, fl.line, 'FIELD_NOT_RESERVED', `${where}: number ${fl.number} is reserved in ${fq}`);
        if (m.reserved.names.some((r) => r.name === fl.name))
          add(p, fl.line, 'FIELD_NOT_RESERVED', `${where}: name "${fl.name}" is reserved in ${fq}`);
        numbers.set(fl.number, fl.name);
        names.set(fl.name, fl.number);
        const refs = fl.label === 'map' ? [fl.type.key, fl.type.value] : [fl.type];
        for (const t of refs)
          if (resolveType(t, fq, types) === null)
            add(p, fl.line, 'TYPE_KNOWN', `${where}: type ${t} is no scalar, message or enum in scope`);
      }
      for (const e of m.enums) checkEnum(e, `${fq}.${e.name}`);
      for (const n of m.messages) checkMessage(n, `${fq}.${n.name}`);
    };

    for (const e of f.enums) checkEnum(e, `${f.package}.${e.name}`);
    for (const m of f.messages) checkMessage(m, `${f.package}.${m.name}`);

    for (const s of f.services) {
      const sfq = `${f.package}.${s.name}`;
      if (!PASCAL.test(s.name)) add(p, s.line, 'SERVICE_PASCAL_CASE', `service ${sfq} must be PascalCase`);
      const used = new Map();
      for (const r of s.rpcs) {
        const rfq = `${sfq}.${r.name}`;
        if (!PASCAL.test(r.name)) add(p, r.line, 'RPC_PASCAL_CASE', `rpc ${rfq} must be PascalCase`, rfq);
        for (const [side, type] of [
          ['request', r.request],
          ['response', r.response],
        ]) {
          const resolved = resolveType(type, sfq, types);
          if (resolved === null || types.get(resolved) === 'enum' || SCALARS.has(resolved)) {
            add(p, r.line, 'TYPE_KNOWN', `rpc ${rfq}: ${side} ${type} is no message in scope`, rfq);
            continue;
          }
          const rule = side === 'request' ? 'RPC_REQUEST_STANDARD_NAME' : 'RPC_RESPONSE_STANDARD_NAME';
          const suffix = side === 'request' ? 'Request' : 'Response';
          const ok = [`${f.package}.${r.name}${suffix}`, `${f.package}.${s.name}${r.name}${suffix}`];
          if (!ok.includes(resolved))
            add(
              p,
              r.line,
              rule,
              `rpc ${rfq}: its ${side} must be ${r.name}${suffix} (or ${s.name}${r.name}${suffix}) of package ${f.package}, not ${type}`,
              rfq,
            );
          const prev = used.get(resolved);
          if (prev !== undefined)
            add(
              p,
              r.line,
              'RPC_REQUEST_RESPONSE_UNIQUE',
              `rpc ${rfq}: ${type} is already the request or response of rpc ${prev}`,
              rfq,
            );
          else used.set(resolved, r.name);
        }
      }
    }
  }
  return findings;
}

// ---------------------------------------------------------------------------------------------
// Baseline (the shape compared for breaking changes)

function typeString(fl, scope, types) {
  const r = (t) => resolveType(t, scope, types) ?? t;
  return fl.label === 'map' ? `map<${r(fl.type.key)},${r(fl.type.value)}>` : r(fl.type);
}

function reservedOf(r) {
  return {
    numbers: r.ranges.map((x) => (x.from === x.to ? `${x.from}` : `${x.from} to ${x.to}`)),
    names: r.names.map((x) => x.name),
  };
}

/** The files as the baseline records them: { package: { file, messages, enums, services } }. */
export function describe(files) {
  const types = declaredTypes(files);
  const out = {};
  for (const f of [...files].sort((a, b) => a.path.localeCompare(b.path))) {
    if (!out[f.package]) out[f.package] = { files: [], messages: {}, enums: {}, services: {} };
    const pkg = out[f.package];
    pkg.files.push(f.path);
    const addEnum = (e, fq) => {
      pkg.enums[fq] = {
        values: Object.fromEntries(e.values.map((v) => [String(v.number), v.name])),
        reserved: reservedOf(e.reserved),
      };
    };
    const addMessage = (m, fq) => {
      pkg.messages[fq] = {
        fields: Object.fromEntries(
          [...m.fields]
            .sort((a, b) => a.number - b.number)
            .map((fl) => [
              String(fl.number),
              {
                name: fl.name,
                type: typeString(fl, `${f.package}.${fq}`, types),
                label: fl.label,
                ...(fl.oneof ? { oneof: fl.oneof } : {}),
              },
            ]),
        ),
        reserved: reservedOf(m.reserved),
      };
      for (const e of m.enums) addEnum(e, `${fq}.${e.name}`);
      for (const n of m.messages) addMessage(n, `${fq}.${n.name}`);
    };
    for (const e of f.enums) addEnum(e, e.name);
    for (const m of f.messages) addMessage(m, m.name);
    for (const s of f.services) {
      pkg.services[s.name] = {
        rpcs: Object.fromEntries(
          s.rpcs.map((r) => [
            r.name,
            {
              request: resolveType(r.request, `${f.package}.${s.name}`, types) ?? r.request,
              requestStreaming: r.requestStreaming,
              response: resolveType(r.response, `${f.package}.${s.name}`, types) ?? r.response,
              responseStreaming: r.responseStreaming,
            },
          ]),
        ),
      };
    }
  }
  return sortKeys(out);
}

function sortKeys(v) {
  if (Array.isArray(v)) return v;
  if (v && typeof v === 'object') {
    const keys = Object.keys(v).sort((a, b) => {
      const na = /^[0-9]+$/.test(a);
      const nb = /^[0-9]+$/.test(b);
      return na && nb ? Number(a) - Number(b) : a < b ? -1 : a > b ? 1 : 0;
    });
    return Object.fromEntries(keys.map((k) => [k, sortKeys(v[k])]));
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// Breaking changes

/** "5" or "5 to 10" (as describe() writes them) -> [5, 5] or [5, 10]. */
function rangeOf(r) {
  const [a, b] = r.split(' to ').map(Number);
  return [a, b ?? a];
}

/** Whether every number of `range` is reserved in `reserved` (however its ranges are split). */
function reservedCovers(reserved, range) {
  const [from, to] = rangeOf(range);
  const ranges = reserved.numbers.map(rangeOf).sort((x, y) => x[0] - y[0]);
  let next = from;
  for (const [a, b] of ranges) {
    if (a > next) break;
    if (b >= next) next = b + 1;
    if (next > to) return true;
  }
  return next > to;
}

function reservedHas(reserved, number) {
  return reservedCovers(reserved, String(number));
}

/**
 * The breaking changes from `base` to `cur` (both from describe()), each located in the current
 * files: `lines` maps "package", "package:Message" and "package:Message#number" / "package:Service"
 * / "package:Service.Rpc" / "package:Enum" to a file:line.
 */
export function breaking(base, cur, locate) {
  const findings = [];
  const add = (key, fallbackFile, rule, message) => {
    const at = locate(key) ?? { file: fallbackFile, line: 1 };
    findings.push({ file: at.file, line: at.line, rule, message });
  };
  for (const [pkgName, b] of Object.entries(base)) {
    const c = cur[pkgName];
    const baseFile = b.files[0];
    if (!c) {
      add(
        '',
        baseFile,
        'PACKAGE_NO_DELETE',
        `package ${pkgName} was removed or renamed (its files were ${b.files.join(', ')}): a change old clients would misread is a new package beside it`,
      );
      continue;
    }
    const pkgKey = pkgName;
    for (const [mName, bm] of Object.entries(b.messages)) {
      const cm = c.messages[mName];
      const mfq = `${pkgName}.${mName}`;
      if (!cm) {
        add(pkgKey, baseFile, 'MESSAGE_NO_DELETE', `message ${mfq} was removed`);
        continue;
      }
      const mKey = `${pkgName}:${mName}`;
      for (const r of bm.reserved.numbers)
        if (!reservedCovers(cm.reserved, r))
          add(
            mKey,
            baseFile,
            'RESERVED_MESSAGE_NO_DELETE',
            `message ${mfq}: reserved ${r} is no longer reserved in full`,
          );
      for (const r of bm.reserved.names)
        if (!cm.reserved.names.includes(r))
          add(
            mKey,
            baseFile,
            'RESERVED_MESSAGE_NO_DELETE',
            `message ${mfq}: reserved name "${r}" was dropped`,
          );
      for (const [num, bf] of Object.entries(bm.fields)) {
        const cf = cm.fields[num];
        const where = `field ${mfq}.${bf.name} = ${num}`;
        if (!cf) {
          const moved = Object.entries(cm.fields).find(([, f]) => f.name === bf.name);
          if (moved)
            add(
              `${mKey}#${moved[0]}`,
              baseFile,
              'FIELD_SAME_NUMBER',
              `${where} was renumbered to ${moved[0]}: old peers read it as another field; keep ${num}`,
            );
          else if (!reservedHas(cm.reserved, Number(num)) || !cm.reserved.names.includes(bf.name))
            add(
              mKey,
              baseFile,
              'FIELD_NO_DELETE_UNLESS_RESERVED',
              `${where} was removed without reserving its number and name: add \`reserved ${num};\` and \`reserved "${bf.name}";\` to ${mName}`,
            );
          continue;
        }
        const fKey = `${mKey}#${num}`;
        if (cf.name !== bf.name)
          add(
            fKey,
            baseFile,
            'FIELD_SAME_NAME',
            `${where} was renamed to ${cf.name}: the JSON name and the generated code change`,
          );
        if (cf.type !== bf.type)
          add(fKey, baseFile, 'FIELD_SAME_TYPE', `${where} changed type from ${bf.type} to ${cf.type}`);
        if (cf.label !== bf.label)
          add(
            fKey,
            baseFile,
            'FIELD_SAME_LABEL',
            `${where} changed label from ${bf.label || 'singular'} to ${cf.label || 'singular'}`,
          );
        if ((cf.oneof ?? '') !== (bf.oneof ?? ''))
          add(
            fKey,
            baseFile,
            'FIELD_SAME_ONEOF',
            `${where} moved from oneof "${bf.oneof ?? ''}" to oneof "${cf.oneof ?? ''}"`,
          );
      }
    }
    for (const [eName, be] of Object.entries(b.enums)) {
      const ce = c.enums[eName];
      const efq = `${pkgName}.${eName}`;
      if (!ce) {
        add(pkgKey, baseFile, 'ENUM_NO_DELETE', `enum ${efq} was removed`);
        continue;
      }
      const eKey = `${pkgName}:${eName}`;
      for (const r of be.reserved.numbers)
        if (!reservedCovers(ce.reserved, r))
          add(
            eKey,
            baseFile,
            'RESERVED_ENUM_NO_DELETE',
            `enum ${efq}: reserved ${r} is no longer reserved in full`,
          );
      for (const r of be.reserved.names)
        if (!ce.reserved.names.includes(r))
          add(eKey, baseFile, 'RESERVED_ENUM_NO_DELETE', `enum ${efq}: reserved name "${r}" was dropped`);
      for (const [num, bv] of Object.entries(be.values)) {
        const cv = ce.values[num];
        if (cv === undefined) {
          if (!reservedHas(ce.reserved, Number(num)) || !ce.reserved.names.includes(bv))
            add(
              eKey,
              baseFile,
              'ENUM_VALUE_NO_DELETE_UNLESS_RESERVED',
              `enum value ${efq}.${bv} = ${num} was removed without reserving its number and name`,
            );
        } else if (cv !== bv)
          add(
            eKey,
            baseFile,
            'ENUM_VALUE_SAME_NAME',
            `enum value ${efq}.${bv} = ${num} was renamed to ${cv}: the JSON name and the generated code change`,
          );
      }
    }
    for (const [sName, bs] of Object.entries(b.services)) {
      const cs = c.services[sName];
      const sfq = `${pkgName}.${sName}`;
      if (!cs) {
        add(pkgKey, baseFile, 'SERVICE_NO_DELETE', `service ${sfq} was removed`);
        continue;
      }
      for (const [rName, br] of Object.entries(bs.rpcs)) {
        const cr = cs.rpcs[rName];
        const rfq = `${sfq}.${rName}`;
        if (!cr) {
          add(`${pkgName}:${sName}`, baseFile, 'RPC_NO_DELETE', `rpc ${rfq} was removed`);
          continue;
        }
        const rKey = `${pkgName}:${sName}.${rName}`;
        if (cr.request !== br.request)
          add(
            rKey,
            baseFile,
            'RPC_SAME_REQUEST_TYPE',
            `rpc ${rfq}: request changed from ${br.request} to ${cr.request}`,
          );
        if (cr.response !== br.response)
          add(
            rKey,
            baseFile,
            'RPC_SAME_RESPONSE_TYPE',
            `rpc ${rfq}: response changed from ${br.response} to ${cr.response}`,
          );
        if (cr.requestStreaming !== br.requestStreaming)
          add(
            rKey,
            baseFile,
            'RPC_SAME_CLIENT_STREAMING',
            `rpc ${rfq}: client streaming changed from ${br.requestStreaming} to ${cr.requestStreaming}`,
          );
        if (cr.responseStreaming !== br.responseStreaming)
          add(
            rKey,
            baseFile,
            'RPC_SAME_SERVER_STREAMING',
            `rpc ${rfq}: server streaming changed from ${br.responseStreaming} to ${cr.responseStreaming}`,
          );
      }
    }
  }
  return findings;
}

/** Where each element is in the parsed files (for the location of a breaking change). */
function locator(files) {
  const at = new Map();
  for (const f of files) {
    const file = f.path;
    at.set(f.package, { file, line: f.packageLine });
    const walk = (prefix, msgs, enums) => {
      for (const e of enums) at.set(`${f.package}:${prefix}${e.name}`, { file, line: e.line });
      for (const m of msgs) {
        const name = `${prefix}${m.name}`;
        at.set(`${f.package}:${name}`, { file, line: m.line });
        for (const fl of m.fields) at.set(`${f.package}:${name}#${fl.number}`, { file, line: fl.line });
        walk(`${name}.`, m.messages, m.enums);
      }
    };
    walk('', f.messages, f.enums);
    for (const s of f.services) {
      at.set(`${f.package}:${s.name}`, { file, line: s.line });
      for (const r of s.rpcs) at.set(`${f.package}:${s.name}.${r.name}`, { file, line: r.line });
    }
  }
  return (key) => at.get(key);
}

/** What the files have that the baseline does not (so the baseline is to be rewritten). */
function additions(base, cur) {
  const out = [];
  for (const [pkgName, c] of Object.entries(cur)) {
    const b = base[pkgName];
    if (!b) {
      out.push(`package ${pkgName}`);
      continue;
    }
    const diff = (kind, cs, bs) => {
      for (const k of Object.keys(cs)) if (!(k in bs)) out.push(`${kind} ${pkgName}.${k}`);
    };
    diff('message', c.messages, b.messages);
    diff('enum', c.enums, b.enums);
    diff('service', c.services, b.services);
    for (const [m, cm] of Object.entries(c.messages)) {
      const bm = b.messages[m];
      if (!bm) continue;
      for (const n of Object.keys(cm.fields)) if (!(n in bm.fields)) out.push(`field ${pkgName}.${m} = ${n}`);
      for (const r of cm.reserved.numbers)
        if (!reservedCovers(bm.reserved, r)) out.push(`reserved ${r} in ${pkgName}.${m}`);
      for (const r of cm.reserved.names)
        if (!bm.reserved.names.includes(r)) out.push(`reserved "${r}" in ${pkgName}.${m}`);
    }
    for (const [e, ce] of Object.entries(c.enums)) {
      const be = b.enums[e];
      if (!be) continue;
      for (const n of Object.keys(ce.values))
        if (!(n in be.values)) out.push(`enum value ${pkgName}.${e} = ${n}`);
      for (const r of [...ce.reserved.numbers, ...ce.reserved.names])
        if (![...be.reserved.numbers, ...be.reserved.names].includes(r))
          out.push(`reserved ${r} in ${pkgName}.${e}`);
    }
    for (const [s, cs] of Object.entries(c.services)) {
      const bs = b.services[s];
      if (!bs) continue;
      for (const r of Object.keys(cs.rpcs)) if (!(r in bs.rpcs)) out.push(`rpc ${pkgName}.${s}.${r}`);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Command line

function protoFiles(dir) {
  const out = [];
  const walk = (d) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.proto')) out.push(relative(dir, p).split('\\').join('/'));
    }
  };
  walk(dir);
  return out;
}

function usage(message) {
  process.stderr.write(
    `proto-check: ${message}\nusage: node scripts/proto-check.mjs [--proto-dir DIR] [--baseline FILE] [--write-baseline [--allow-breaking]]\n`,
  );
  process.exit(2);
}

function main(argv) {
  let protoDir = join(ROOT, 'libs/proto/proto');
  let baselinePath = join(ROOT, 'libs/proto/baseline.json');
  let write = false;
  let allowBreaking = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--proto-dir' || a === '--baseline') {
      const v = argv[++i];
      if (v === undefined || v.startsWith('--')) usage(`${a} needs a path`);
      if (a === '--proto-dir') protoDir = resolve(v);
      else baselinePath = resolve(v);
    } else if (a === '--write-baseline') write = true;
    else if (a === '--allow-breaking') allowBreaking = true;
    else usage(`unknown argument "${a}"`);
  }
  if (allowBreaking && !write) usage('--allow-breaking only goes with --write-baseline');
  if (!existsSync(protoDir) || !statSync(protoDir).isDirectory())
    usage(`--proto-dir ${protoDir} is not a directory`);

  const rel = relative(process.cwd(), protoDir).split('\\').join('/') || '.';
  const paths = protoFiles(protoDir);
  if (paths.length === 0) usage(`no .proto file under ${protoDir}`);
  let files;
  try {
    files = paths.map((p) => parseProto(readFileSync(join(protoDir, p), 'utf8'), p));
  } catch (e) {
    if (!(e instanceof ProtoSyntaxError)) throw e;
    process.stderr.write(`${rel}/${e.message}\n`);
    process.exit(2);
  }
  const report = (list) => list.map((f) => `${rel}/${f.file}:${f.line}: ${f.rule}: ${f.message}`);

  const lintFindings = lint(files);
  const cur = describe(files);
  let breakFindings = [];
  let added = [];
  const haveBaseline = existsSync(baselinePath);
  if (haveBaseline) {
    let base;
    try {
      base = JSON.parse(readFileSync(baselinePath, 'utf8'));
    } catch (e) {
      usage(`baseline ${baselinePath} is not JSON: ${e.message}`);
    }
    breakFindings = breaking(base, cur, locator(files));
    added = additions(base, cur);
  }
  const lines = [...report(lintFindings), ...report(breakFindings)];

  if (write) {
    if (lintFindings.length > 0 || (breakFindings.length > 0 && !allowBreaking)) {
      process.stderr.write(`${lines.join('\n')}\n`);
      process.stderr.write(
        `proto-check: baseline not written: ${lintFindings.length} lint and ${breakFindings.length} breaking finding(s)` +
          `${breakFindings.length > 0 ? ' (--allow-breaking only to retire a whole old package version)' : ''}\n`,
      );
      process.exit(1);
    }
    writeFileSync(baselinePath, `${JSON.stringify(cur, null, 2)}\n`);
    process.stdout.write(
      `proto-check: wrote ${relative(process.cwd(), baselinePath)} (${Object.keys(cur).length} packages` +
        `${breakFindings.length > 0 ? `, ${breakFindings.length} breaking change(s) accepted` : ''})\n`,
    );
    return;
  }
  if (!haveBaseline)
    lines.push(
      `${relative(process.cwd(), baselinePath)}:1: BASELINE: missing; write it with --write-baseline`,
    );
  else if (added.length > 0 && breakFindings.length === 0)
    lines.push(
      `${relative(process.cwd(), baselinePath)}:1: BASELINE_CURRENT: the baseline lacks ${added.join(', ')}: ` +
        'run `npm run proto:check -- --write-baseline` and commit it with the change',
    );
  if (lines.length > 0) {
    process.stderr.write(`${lines.join('\n')}\n`);
    process.stderr.write(`proto-check: ${lines.length} finding(s) in ${paths.length} files\n`);
    process.exit(1);
  }
  process.stdout.write(
    `proto-check: ${paths.length} files, ${Object.keys(cur).length} packages: lint and breaking clean\n`,
  );
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  main(process.argv.slice(2));
