// Gives the wasm program Node's environment (getenv: EMBER_STACKS, ...); emscripten starts it
// with an environment of its own.
Module['preRun'] = [].concat(Module['preRun'] || [], [function () { Object.assign(ENV, process.env); }]);
