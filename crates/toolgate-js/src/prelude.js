// The globals a tool's script gets besides the ECMAScript built-ins: fetch,
// files and console, each ending in a host function. Evaluated the first time
// the script uses one of them, as a function given the host functions and the
// built-ins it relies on, as they were before the script ran: a script that
// replaces JSON or String changes only what it sees itself (and the host
// checks every request again in Rust).
(function (host, intrinsics) {
  "use strict";
  const { parse, stringify, freeze, keys, defineProperty, isArray } = intrinsics;
  const PromiseOf = intrinsics.Promise;
  const StringOf = intrinsics.String;

  function text(value) {
    if (typeof value === "string") return value;
    try {
      const json = stringify(value);
      return json === undefined ? StringOf(value) : json;
    } catch (_) {
      return StringOf(value);
    }
  }
  function line(args) {
    let out = "";
    for (let i = 0; i < args.length; i++) out += (i ? " " : "") + text(args[i]);
    return out;
  }

  class Headers {
    #pairs = [];
    constructor(init) {
      const add = (k, v) => this.#pairs.push([StringOf(k).toLowerCase(), StringOf(v)]);
      if (init === undefined || init === null) return;
      if (isArray(init)) {
        for (const [k, v] of init) add(k, v);
      } else if (typeof init.forEach === "function") {
        init.forEach((v, k) => add(k, v));
      } else {
        for (const k of keys(init)) add(k, init[k]);
      }
    }
    get(name) {
      const key = StringOf(name).toLowerCase();
      const values = [];
      for (const [k, v] of this.#pairs) if (k === key) values.push(v);
      return values.length ? values.join(", ") : null;
    }
    has(name) {
      return this.get(name) !== null;
    }
    forEach(callback) {
      for (const [k, v] of this.#pairs) callback(v, k, this);
    }
    entries() {
      return this.#pairs.map(([k, v]) => [k, v])[Symbol.iterator]();
    }
  }

  class Response {
    #body;
    constructor(raw) {
      this.status = raw.status;
      this.statusText = raw.status_text;
      this.ok = raw.status >= 200 && raw.status < 300;
      this.url = raw.url;
      this.headers = new Headers(raw.headers);
      this.#body = raw.body;
    }
    text() {
      return PromiseOf.resolve(this.#body);
    }
    json() {
      const body = this.#body;
      return new PromiseOf((resolve) => resolve(parse(body)));
    }
  }

  function fetch(resource, init) {
    return new PromiseOf((resolve) => {
      const request = { url: StringOf(resource) };
      if (init !== undefined && init !== null) {
        if (init.method !== undefined) request.method = StringOf(init.method);
        if (init.headers !== undefined && init.headers !== null) {
          const pairs = [];
          new Headers(init.headers).forEach((v, k) => pairs.push([k, v]));
          request.headers = pairs;
        }
        if (init.body !== undefined && init.body !== null) {
          if (typeof init.body !== "string") {
            throw new TypeError("fetch: body must be a string (use JSON.stringify for JSON)");
          }
          request.body = init.body;
        }
      }
      resolve(new Response(parse(host.fetch(stringify(request)))));
    });
  }

  const files = freeze({
    read: (path) => host.read(StringOf(path)),
    list: (path) => parse(host.list(StringOf(path === undefined ? "." : path))),
    write: (path, content) => {
      host.write(StringOf(path), StringOf(content));
    },
  });

  const console = freeze({
    log: (...args) => host.log("info", line(args)),
    info: (...args) => host.log("info", line(args)),
    debug: (...args) => host.log("debug", line(args)),
    warn: (...args) => host.log("warn", line(args)),
    error: (...args) => host.log("error", line(args)),
  });

  const define = (name, value) =>
    defineProperty(globalThis, name, { value, writable: true, configurable: true });
  define("fetch", fetch);
  define("Headers", Headers);
  define("Response", Response);
  define("files", files);
  define("console", console);
})
