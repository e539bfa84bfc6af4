// The TypeScript sandbox child: the Python bootstrap's frame protocol, spoken by Deno.
//
// Started by the child folder's launcher (command_launcher.py), which confined the process and
// then exec'd `deno run --no-prompt --no-remote --no-npm --cached-only <this file> <report JSON>`
// with NO permission flags. Deno without permissions cannot name an inherited fd, so the launcher
// made stdin and stdout the channel socket; the frames are the host's (_host/protocol.py): a 4-byte
// big-endian length, then compact JSON. Order of events (never changes): read the boot frame ->
// send `ready` with the launcher's enforcement report -> (a warm child idles here) -> read the run
// frame -> import the program as a TypeScript module (type annotations stripped by Deno) -> run it
// as the body of an async function with `tools`, `ToolCallError` and a captured `console` -> send
// exactly one `done` -> exit.
//
// Nothing here is trusted by the host; it only has to be correct for well-behaved programs.

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });
const MAX_DEPTH = 400; // keep equal to protocol.MAX_JSON_DEPTH
const stdout = Deno.stdout;
const stdin = Deno.stdin;
const exit = Deno.exit;
const report = JSON.parse(Deno.args[0] ?? '{"layers":[],"landlockAbi":null,"enforcement":"none","notes":[]}');

// deno-lint-ignore no-explicit-any
type Json = any;

let pending = new Uint8Array(0);
const chunk = new Uint8Array(256 * 1024); // one read buffer, reused (a fresh one per read costs)

async function readFrame(): Promise<Json> {
  while (true) {
    if (pending.length >= 4) {
      const size = new DataView(pending.buffer, pending.byteOffset, 4).getUint32(0);
      if (pending.length >= 4 + size) {
        const body = pending.subarray(4, 4 + size);
        pending = pending.slice(4 + size);
        return JSON.parse(decoder.decode(body));
      }
    }
    const n = await stdin.read(chunk);
    if (n === null) exit(0); // the host went away
    if (pending.length === 0) {
      pending = chunk.slice(0, n);
    } else {
      const joined = new Uint8Array(pending.length + n);
      joined.set(pending);
      joined.set(chunk.subarray(0, n), pending.length);
      pending = joined;
    }
  }
}

const writing: Promise<void> = Promise.resolve();

// Synchronous: an async write goes through Deno's blocking-I/O threads, a hop that cost a binding
// call about as much as the rest of it. The host drains the socket continuously.
function sendText(text: string): Promise<void> {
  const body = encoder.encode(text);
  const frame = new Uint8Array(4 + body.length);
  new DataView(frame.buffer).setUint32(0, body.length);
  frame.set(body, 4);
  let offset = 0;
  while (offset < frame.length) offset += stdout.writeSync(frame.subarray(offset));
  return writing;
}

// ASCII-only JSON, as the Python child writes it (a lone surrogate is refused before it gets here).
function quote(text: string): string {
  return JSON.stringify(text).replace(/[\u007f-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}

class NotLossless extends Error {}

// JSON that survives a round trip unchanged, as the host requires of every value: finite numbers
// (not -0, integers within 2**53), well-formed strings, dense arrays, plain objects.
function dumps(value: Json, depth = 0): string {
  if (depth > MAX_DEPTH) throw new NotLossless(`nested deeper than ${MAX_DEPTH}`);
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) throw new NotLossless("NaN and infinities are not JSON numbers");
      if (Object.is(value, -0)) throw new NotLossless("-0 is not lossless JSON");
      if (Number.isInteger(value) && !Number.isSafeInteger(value)) {
        throw new NotLossless("integers beyond 2**53 - 1 are not lossless JSON");
      }
      return String(value);
    case "string":
      if (!value.isWellFormed()) throw new NotLossless("lone surrogate in a string");
      return quote(value);
    case "object": {
      if (Array.isArray(value)) {
        const items: string[] = [];
        for (let i = 0; i < value.length; i++) {
          if (!(i in value) || value[i] === undefined) throw new NotLossless("undefined in an array");
          items.push(dumps(value[i], depth + 1));
        }
        return "[" + items.join(",") + "]";
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) {
        throw new NotLossless(`${proto?.constructor?.name ?? "object"} is not a plain JSON value`);
      }
      const parts: string[] = [];
      for (const key of Object.keys(value)) {
        if (!key.isWellFormed()) throw new NotLossless("lone surrogate in a string");
        if (value[key] === undefined) continue; // as JSON.stringify: an absent member
        parts.push(quote(key) + ":" + dumps(value[key], depth + 1));
      }
      return "{" + parts.join(",") + "}";
    }
    default:
      throw new NotLossless(`${typeof value} is not a JSON value`);
  }
}

let outLeft = 0;
let valueLimit = 0;
let maxInFlight = 1;
let nextId = 0;
let inFlight = 0;
const waiting: Array<() => void> = [];
const replies = new Map<number, { resolve: (v: Json) => void; reject: (e: unknown) => void; name: string }>();

function emitLog(text: string): void {
  text = text.toWellFormed();
  // Each entry costs its bytes plus the newline that joins it to the next (the host's count).
  const size = encoder.encode(text).length + 1;
  if (size > outLeft) {
    // Just enough to take the host over its cap; it ends the run (output-limit).
    void sendText('{"t":"log","text":' + quote(text.slice(0, Math.max(outLeft, 0) + 1)) + "}");
    outLeft = -1;
    return;
  }
  outLeft -= size;
  void sendText('{"t":"log","text":' + quote(text) + "}");
}

function format(values: unknown[]): string {
  return values
    .map((value) => (typeof value === "string" ? value : Deno.inspect(value, { depth: 6, colors: false })))
    .join(" ");
}

const capturedConsole = Object.freeze({
  log: (...values: unknown[]) => emitLog(format(values)),
  info: (...values: unknown[]) => emitLog(format(values)),
  warn: (...values: unknown[]) => emitLog(format(values)),
  error: (...values: unknown[]) => emitLog(format(values)),
  debug: (...values: unknown[]) => emitLog(format(values)),
});

async function acquire(): Promise<void> {
  if (inFlight < maxInFlight) {
    inFlight++;
    return;
  }
  await new Promise<void>((resolve) => waiting.push(resolve));
  inFlight++;
}

function release(): void {
  inFlight--;
  const next = waiting.shift();
  if (next !== undefined) next();
}

// deno-lint-ignore no-explicit-any
function namespace(global: string, makeError: (message: string, name: string) => Error): any {
  return new Proxy(Object.create(null), {
    get(_target, name) {
      if (typeof name !== "string" || name === "then") return undefined;
      return async (args: Json = {}) => {
        let text: string;
        try {
          text = dumps(args);
        } catch (error) {
          throw new TypeError(`${global}.${name}() arguments must be lossless JSON: ${(error as Error).message}`);
        }
        await acquire();
        try {
          const id = ++nextId;
          const answer = new Promise<Json>((resolve, reject) => replies.set(id, { resolve, reject, name }));
          await sendText(`{"t":"call","id":${id},"ns":${quote(global)},"name":${quote(name)},"args":${text}}`);
          return await answer.catch((message: string) => {
            throw makeError(message, name);
          });
        } finally {
          release();
        }
      };
    },
  });
}

async function readReplies(): Promise<void> {
  while (true) {
    const frame = await readFrame();
    if (frame?.t !== "reply" || typeof frame.id !== "number") continue;
    const waiter = replies.get(frame.id);
    if (waiter === undefined) continue;
    replies.delete(frame.id);
    if (frame.ok === true) waiter.resolve(frame.value);
    else waiter.reject(String(frame.message));
  }
}

async function finish(text: string): Promise<never> {
  await sendText(text);
  exit(0);
}

function fail(kind: string, message: string): Promise<never> {
  return finish(`{"t":"done","ok":false,"kind":${quote(kind)},"message":${quote(message.toWellFormed())}}`);
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    // The program's own frames only (the bootstrap's and Deno's say nothing to the model).
    const lines = String(error.stack ?? `${error.name}: ${error.message}`).split("\n");
    const kept = lines.filter((line) => !line.trimStart().startsWith("at ") || line.includes("program.ts"));
    return kept.join("\n").replaceAll(/data:[^)\s]*program\.ts/g, "program.ts").slice(0, 60000);
  }
  return `Uncaught ${Deno.inspect(error)}`;
}

function base64(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

function isMemoryError(error: unknown): boolean {
  return error instanceof RangeError && /allocation failed|Unable to grow|could not allocate|Out of memory/i.test(error.message);
}

async function main(): Promise<void> {
  await readFrame(); // the boot frame: the confinement is the launcher's, done before Deno started
  await sendText('{"t":"ready","report":' + JSON.stringify(report) + "}");
  const run = await readFrame();
  outLeft = Number(run.limits.outputBytes);
  valueLimit = Number(run.limits.valueBytes);
  maxInFlight = Math.max(Number(run.limits.maxInFlight), 1);
  const names: string[] = [];
  const values: unknown[] = [];
  for (const binding of run.bindings) {
    const errorClass = binding.errorClass;
    let makeError = (message: string, _name: string) => new Error(message);
    if (errorClass !== null) {
      const member = String(errorClass.member);
      const cls = {
        [errorClass.name]: class extends Error {
          constructor(message: string, name?: string) {
            super(message);
            this.name = errorClass.name;
            // deno-lint-ignore no-explicit-any
            (this as any)[member] = name;
          }
        },
      }[errorClass.name];
      if (!names.includes(errorClass.name)) {
        names.push(errorClass.name);
        values.push(cls);
      }
      makeError = (message: string, name: string) => new cls(message, name);
    }
    names.push(binding.global);
    values.push(namespace(binding.global, makeError));
  }
  names.push("console");
  values.push(capturedConsole);
  void readReplies();
  // Workers are separate isolates: outside the memory limit the host set for this one.
  // deno-lint-ignore no-explicit-any
  (globalThis as any).Worker = undefined;
  // deno-lint-ignore no-explicit-any
  (globalThis as any).console = capturedConsole;
  const source =
    `export default async function (${names.join(", ")}) {\n${run.program}\n}\n//# sourceURL=program.ts\n`;
  let body: (...args: unknown[]) => Promise<unknown>;
  try {
    // A program that is already JavaScript (no type syntax) is compiled as it is: importing a
    // TypeScript module costs a warm run most of its time (the transpiler). Both are strict mode.
    const AsyncFunction = (async function () {}).constructor as new (...args: string[]) => typeof body;
    body = new AsyncFunction(...names, `"use strict";\n${run.program}\n//# sourceURL=program.ts`);
  } catch {
    try {
      body = (await import("data:application/typescript;base64," + base64(encoder.encode(source)))).default;
    } catch (error) {
      return fail("exception", describe(error));
    }
  }
  let result: unknown;
  try {
    result = await body(...values);
  } catch (error) {
    return fail(isMemoryError(error) ? "memory-limit" : "exception", describe(error));
  }
  await writing;
  if (outLeft < 0) return new Promise(() => {}); // over the output budget: the host ends the run
  if (result === undefined) return finish('{"t":"done","ok":true}');
  let value: string;
  try {
    value = dumps(result);
  } catch (error) {
    return fail("invalid-output", `program completion must be lossless JSON (${(error as Error).message})`);
  }
  if (value.length > valueLimit) {
    return fail("value-limit", `completion value of ${value.length} bytes exceeds ${valueLimit}`);
  }
  return finish('{"t":"done","ok":true,"value":' + value + "}");
}

globalThis.addEventListener("unhandledrejection", (event) => {
  event.preventDefault(); // a forgotten promise's failure is not the run's (as in Python's asyncio)
});

await main();
