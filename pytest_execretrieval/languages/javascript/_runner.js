// The Node runner's node side: serves one suite in a fresh vm context (then the zygote kills it).
//
// Started by the Node runner's zygote (_node.py), confined before exec (namespaces, nobody,
// no_new_privs, Landlock, the `node` seccomp program, rlimits), with an empty environment and
// these fds: 3 run frames from the zygote; 4 frames to the checker (the child protocol of
// _sandbox_child.py: {"m": outcome}, {"e": test, "r": answer} per call, {"d": 1}); 5 one byte
// "r" once ready, then "d" to the zygote after each suite; 1 the suite's console output. Frames
// are a 4-byte big-endian length and UTF-8 JSON. Everything here is synchronous: the event loop
// never runs, so no timer, I/O callback or FinalizationRegistry callback ever fires.
//
// The boundary is the context: only strings cross into it (the snippet's source, each call's
// arguments as JSON text, parsed inside; the results come back as text encoded inside, by a
// driver that captured the intrinsics it uses before the snippet ran), and this file never
// hands a host object in. Its sandbox object has a null prototype (so `this.constructor` is
// the context's own Object, whose Function cannot compile strings: codeGeneration is off), and
// every function here is strict (so `caller` and stack-trace call sites expose none of them).
// A thrown value is the one thing that crosses out: it is classified here by reflection that
// runs no code of the context (util.types.isProxy, Object.getPrototypeOf and property
// descriptors of non-proxies, identity with the context's genuine error prototypes).
'use strict';

const fs = require('fs');
const vm = require('vm');
const types = require('util').types;
const { isProxy } = types;

// Whatever this file calls after a snippet's code has run is frozen before any snippet runs:
// --frozen-intrinsics freezes the language's intrinsics (Object, Map, JSON, Array.prototype,
// ...), and here node's own objects this file uses (Buffer, fs, vm, util.types) and the host's
// globalThis, once the eval wrapper's require and module are gone from it. A host object that
// reaches a snippet (an error node raised in host code) leads only to frozen things.
for (const name of ['require', 'module', 'exports', '__filename', '__dirname']) {
  delete globalThis[name];
}
const FROZEN = [globalThis, Buffer, Buffer.prototype, fs, vm, vm.Script, vm.Script.prototype, types];
for (const o of FROZEN) Object.freeze(o);

const RUN_FD = 3;
const REPLY_FD = 4;
const ZYGOTE_FD = 5;
const MAX_RUN = 64 << 20; // the zygote's frames (code and calls)
const MAX_ANSWER = 12 << 20; // bytes of one encoded value (the checker reads 16 MiB frames)
const ERROR_NAMES = [
  'Object', 'Error', 'TypeError', 'RangeError', 'ReferenceError', 'SyntaxError', 'EvalError',
  'URIError', 'AggregateError',
];
const RESERVED = new Set((
  'break case catch class const continue debugger default delete do else enum export extends ' +
  'false finally for function if import in instanceof new null return super switch this throw ' +
  'true try typeof var void while with yield let static implements interface package private ' +
  'protected public await arguments eval undefined'
).split(' '));
// import() in the snippet: without a callback (or without --experimental-vm-modules, which
// _node.py passes) node rejects it with an error of OUR realm, a way to our intrinsics; this
// callback throws a primitive instead, and the import never settles in the context.
const SCRIPT_OPTIONS = {
  filename: 'candidate.js',
  importModuleDynamically() {
    throw 'no modules'; // eslint-disable-line no-throw-literal
  },
};
const CONTEXT_OPTIONS = {
  codeGeneration: { strings: false, wasm: false },
  microtaskMode: 'afterEvaluate', // the context's own job queue, drained only after a script
};

// Evaluated inside each fresh context (as source text), before the snippet: captures what it
// uses, then returns {call, output, console}. Nothing of it is reachable from the snippet.
function contextDriver(outputCap) {
  'use strict';
  const JSONParse = JSON.parse;
  const JSONStringify = JSON.stringify;
  const apply = Reflect.apply;
  const ownKeys = Reflect.ownKeys;
  const getProto = Object.getPrototypeOf;
  const getDesc = Object.getOwnPropertyDescriptor;
  const hasOwn = Object.hasOwn;
  const isArray = Array.isArray;
  const isSafe = Number.isSafeInteger;
  const same = Object.is;
  const ObjectProto = Object.prototype;
  const toText = String;
  const strSlice = String.prototype.slice;
  const setSize = getDesc(Set.prototype, 'size').get;
  const mapSize = getDesc(Map.prototype, 'size').get;
  const setValues = Set.prototype.values;
  const mapEntries = Map.prototype.entries;
  const setNext = getProto(new Set().values()).next;
  const mapNext = getProto(new Map().entries()).next;
  const bigintText = BigInt.prototype.toString;
  const join = Array.prototype.join;
  const setProto = Object.setPrototypeOf;
  const MAX_DEPTH = 200;
  const MAX_ELEMENTS = 1 << 20;
  const MAX_TEXT = 4 << 20; // UTF-16 units of one encoded value
  const FAIL = {};
  let reason = '';
  let elements = 0;
  let text = 0;

  function fail(why) {
    reason = why;
    throw FAIL;
  }
  // The encoded text is put together in an array without a prototype (so no setter that the
  // snippet planted on Array.prototype runs) and joined once: concatenating strings level by
  // level makes deep ropes that V8 flattens again and again.
  let parts = null;
  let count = 0;
  function put(s) {
    text -= s.length;
    if (text < 0) fail('a value longer than ' + MAX_TEXT + ' characters encoded');
    parts[count++] = s;
  }

  function className(proto) {
    try {
      const c = getDesc(proto, 'constructor');
      if (c && hasOwn(c, 'value') && typeof c.value === 'function') {
        const n = getDesc(c.value, 'name');
        if (n && hasOwn(n, 'value') && typeof n.value === 'string') {
          return apply(strSlice, n.value, [0, 60]) || 'anonymous';
        }
      }
    } catch (e) {
      // a proxy's trap threw: the name is only for the message
    }
    return 'Object';
  }

  function size(getter, v) {
    try {
      return apply(getter, v, []);
    } catch (e) {
      return -1; // not a Set (Map): its brand check threw
    }
  }

  function key(v, depth) {
    const t = typeof v;
    if (v !== null && (t === 'object' || t === 'function' || t === 'symbol')) {
      fail('a Set element or Map key that is not a primitive');
    }
    enc(v, depth);
  }

  function enc(v, depth) {
    if (depth > MAX_DEPTH) fail('a value nested deeper than ' + MAX_DEPTH + ' levels');
    if (--elements < 0) fail('a value of more than ' + MAX_ELEMENTS + ' elements');
    switch (typeof v) {
      case 'undefined':
        return put('null');
      case 'boolean':
        return put(v ? 'true' : 'false');
      case 'string':
        return put(JSONStringify(v));
      case 'number':
        if (isSafe(v)) return put('' + v);
        return put('["n","' + (same(v, -0) ? '-0' : '' + v) + '"]');
      case 'bigint':
        if (v > -(2n ** 60n) && v < 2n ** 60n) return put('' + v);
        return put('["i","' + apply(bigintText, v, [16]) + '"]');
      case 'object':
        return v === null ? put('null') : object(v, depth + 1);
      default:
        return fail('a ' + typeof v);
    }
  }

  function object(v, depth) {
    if (isArray(v)) {
      const length = getDesc(v, 'length');
      const n = length && hasOwn(length, 'value') ? length.value : -1;
      if (!isSafe(n) || n < 0 || n > elements) fail('an array of bad or excessive length');
      put('["l"');
      for (let i = 0; i < n; i++) {
        const d = getDesc(v, i);
        put(',');
        if (d === undefined) {
          put('null'); // a hole
        } else if (!hasOwn(d, 'value')) {
          fail('an array element with a getter');
        } else {
          enc(d.value, depth);
        }
      }
      return put(']');
    }
    // Arrays and plain objects first: the Set and Map brand checks throw for anything else,
    // and a throw costs microseconds (a value of many small arrays would take seconds).
    const proto = getProto(v);
    if (proto !== ObjectProto && proto !== null) {
      if (size(setSize, v) >= 0) {
        const it = apply(setValues, v, []);
        put('["s"');
        for (let r = apply(setNext, it, []); !r.done; r = apply(setNext, it, [])) {
          put(',');
          key(r.value, depth);
        }
        return put(']');
      }
      if (size(mapSize, v) >= 0) {
        const it = apply(mapEntries, v, []);
        put('["d"');
        for (let r = apply(mapNext, it, []); !r.done; r = apply(mapNext, it, [])) {
          const pair = r.value;
          put(',');
          key(pair[0], depth);
          put(',');
          enc(pair[1], depth);
        }
        return put(']');
      }
      fail('an instance of ' + className(proto));
    }
    const keys = ownKeys(v);
    put('["d"');
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i];
      if (typeof k === 'symbol') continue;
      const d = getDesc(v, k);
      if (d === undefined || !d.enumerable) continue;
      if (!hasOwn(d, 'value')) fail('an object with a getter');
      put(',');
      put(JSONStringify(k));
      put(',');
      enc(d.value, depth);
    }
    return put(']');
  }

  function encode(value) {
    elements = MAX_ELEMENTS + 1; // the value itself is not an element
    text = MAX_TEXT;
    parts = setProto([], null);
    count = 0;
    try {
      enc(value, 0);
      return '{"v":' + apply(join, parts, ['']) + '}';
    } catch (e) {
      const why = e === FAIL ? reason : 'a value whose encoding threw';
      return '{"u":' + JSONStringify('javascript: ' + why) + '}';
    } finally {
      parts = null;
    }
  }

  function call(fn, argsText, kind) {
    const value = apply(fn, undefined, JSONParse(argsText));
    return kind === 'call' ? '{"ok":1}' : encode(value);
  }

  let output = '';
  function write(args) {
    let line = '';
    for (let i = 0; i < args.length; i++) {
      let s;
      try {
        s = typeof args[i] === 'string' ? args[i] : toText(args[i]);
      } catch (e) {
        s = '[unprintable]';
      }
      line += (i ? ' ' : '') + s;
    }
    if (output.length < outputCap) output += apply(strSlice, line + '\n', [0, outputCap - output.length]);
  }
  const log = (...args) => write(args);
  globalThis.console = { log, info: log, warn: log, error: log, debug: log };
  delete globalThis.WebAssembly; // and codeGeneration.wasm is off
  return { call, output: () => output };
}

const DRIVER = '(' + contextDriver.toString() + ')';

function readExact(fd, n) {
  const buf = Buffer.allocUnsafe(n);
  let got = 0;
  while (got < n) {
    const r = fs.readSync(fd, buf, got, n - got, null);
    if (r === 0) return null;
    got += r;
  }
  return buf;
}

function readFrame(fd) {
  const head = readExact(fd, 4);
  if (head === null) return null;
  const size = head.readUInt32BE(0);
  if (size > MAX_RUN) throw new Error('a run frame of ' + size + ' bytes');
  const body = readExact(fd, size);
  return body === null ? null : JSON.parse(body.toString('utf8'));
}

function writeAll(fd, buf) {
  let done = 0;
  while (done < buf.length) done += fs.writeSync(fd, buf, done, buf.length - done);
}

function send(text) {
  const body = Buffer.from(text, 'utf8');
  const head = Buffer.allocUnsafe(4);
  head.writeUInt32BE(body.length, 0);
  writeAll(REPLY_FD, Buffer.concat([head, body]));
}

function genuine(ctx) {
  // The context's error prototypes, read before any of the snippet's code has run, and ours.
  const names = new Map();
  const theirs = vm.runInContext('[' + ERROR_NAMES.map((n) => n + '.prototype').join(',') + ']', ctx);
  const ours = [Object, Error, TypeError, RangeError, ReferenceError, SyntaxError, EvalError, URIError, AggregateError];
  for (let i = 0; i < ERROR_NAMES.length; i++) {
    names.set(theirs[i], ERROR_NAMES[i]);
    names.set(ours[i].prototype, ERROR_NAMES[i]);
  }
  return names;
}

function ownName(proto) {
  if (isProxy(proto)) return '?';
  const c = Object.getOwnPropertyDescriptor(proto, 'constructor');
  const fn = c && 'value' in c ? c.value : undefined;
  if (typeof fn !== 'function' || isProxy(fn)) return '?';
  const n = Object.getOwnPropertyDescriptor(fn, 'name');
  return n && 'value' in n && typeof n.value === 'string' ? n.value.slice(0, 100) : '?';
}

// The class chain of a thrown value ("builtins.RangeError" for a genuine intrinsic,
// "javascript.Name" for the snippet's own classes), or ["javascript.Throw"] when it is not an
// Error (a string, a plain object, a proxy). Runs no code of the context.
function chain(thrown, names) {
  const mro = [];
  let p = thrown;
  let isError = false;
  if (p !== null && (typeof p === 'object' || typeof p === 'function')) {
    for (let depth = 0; depth < 64 && !isProxy(p); depth++) {
      p = Object.getPrototypeOf(p);
      if (p === null) break;
      const name = names.get(p);
      mro.push(name === undefined ? 'javascript.' + ownName(p) : 'builtins.' + name);
      if (name === 'Error') isError = true;
    }
  }
  return isError && !isProxy(p) ? mro : ['javascript.Throw'];
}

function shortName(mro) {
  const first = mro[0];
  return first.slice(first.indexOf('.') + 1) || 'Throw';
}

function lookup(name, ctx) {
  // The entry point as the snippet's global code left it (a function declaration, or a
  // top-level const/let/class binding); undefined when it defines none.
  if (!/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) || RESERVED.has(name)) return { missing: true };
  try {
    const fn = vm.runInContext('typeof ' + name + ' === "undefined" ? undefined : ' + name, ctx);
    return fn === undefined ? { missing: true } : { fn };
  } catch (e) {
    return { missing: true }; // e.g. a let binding in its temporal dead zone
  }
}

const MISSING = '{"x":"ReferenceError","mro":["builtins.ReferenceError","builtins.Error","builtins.Object"]}';

function suite(run) {
  const ctx = vm.createContext(Object.create(null), CONTEXT_OPTIONS);
  const names = genuine(ctx);
  const driver = vm.runInContext(DRIVER + '(' + (run.output_bytes | 0) + ')', ctx);
  const call = driver.call;
  const output = driver.output;
  let module = 'pass';
  try {
    new vm.Script(run.code, SCRIPT_OPTIONS).runInContext(ctx);
  } catch (e) {
    module = 'error:' + shortName(chain(e, names));
  }
  send('{"m":' + JSON.stringify(module) + '}');
  if (module === 'pass') {
    const found = new Map();
    for (const c of run.calls) {
      if (c !== null && !found.has(c[1])) found.set(c[1], lookup(c[1], ctx));
    }
    run.calls.forEach((c, i) => {
      if (c === null) return;
      const [kind, name, args] = c;
      const entry = found.get(name);
      let answer;
      if (entry.missing) {
        answer = MISSING;
      } else {
        try {
          answer = call(entry.fn, args, kind);
          if (typeof answer !== 'string') answer = '{"u":"javascript: the driver returned no text"}';
          else if (Buffer.byteLength(answer, 'utf8') > MAX_ANSWER) {
            answer = '{"u":"javascript: a value of more than ' + MAX_ANSWER + ' bytes encoded"}';
          }
        } catch (e) {
          const mro = chain(e, names);
          answer = kind === 'call'
            ? '{"ok":0,"mro":' + JSON.stringify(mro) + '}'
            : '{"x":' + JSON.stringify(shortName(mro)) + ',"mro":' + JSON.stringify(mro) + '}';
        }
      }
      send('{"e":' + i + ',"r":' + answer + '}');
    });
  }
  const text = output();
  if (typeof text === 'string' && text) writeAll(1, Buffer.from(text, 'utf8'));
  send('{"d":1}');
}

function main() {
  writeAll(ZYGOTE_FD, Buffer.from('r'));
  for (;;) {
    const run = readFrame(RUN_FD);
    if (run === null) return;
    suite(run);
    writeAll(ZYGOTE_FD, Buffer.from('d'));
  }
}

main();
