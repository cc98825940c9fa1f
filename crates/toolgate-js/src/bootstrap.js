// Defines the prelude's globals as accessors that run the prelude (`load`, a
// host function) the first time one of them is read or assigned. It keeps the
// built-ins the prelude relies on as they are now, before the script runs.
(function (load) {
  "use strict";
  const intrinsics = {
    parse: JSON.parse,
    stringify: JSON.stringify,
    freeze: Object.freeze,
    keys: Object.keys,
    defineProperty: Object.defineProperty,
    isArray: Array.isArray,
    Promise,
    String,
  };
  const defineProperty = Object.defineProperty;
  let loaded = false;
  const ensure = () => {
    if (!loaded) {
      load(intrinsics);
      loaded = true;
    }
  };
  for (const name of ["fetch", "Headers", "Response", "files", "console"]) {
    defineProperty(globalThis, name, {
      get() {
        ensure();
        return globalThis[name];
      },
      set(value) {
        ensure();
        globalThis[name] = value;
      },
      configurable: true,
    });
  }
})
