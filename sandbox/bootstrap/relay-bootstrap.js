// relay-bootstrap.js - run one Relay node handler.
//
// Usage: node relay-bootstrap.js MODULE.FUNCTION
//        node relay-bootstrap.js --pool
// Run with the app directory as working directory and the event JSON on
// stdin. Loads MODULE (text before the last dot; dots become directories,
// so "events.created" is ./events/created.js, .cjs or .mjs) from the app
// directory and calls its export FUNCTION with the decoded event; a
// returned promise is awaited (async handlers). Exit 0 when it settles,
// 1 with the stack on stderr when it throws or rejects; process.exit(N)
// inside the handler exits N. Exit 2 on bad usage. When MODULE cannot be
// loaded or FUNCTION is not an exported function, the stack is followed
// by one line "relay-bootstrap: cannot load handler: <Error>: <message>"
// and the exit status is 1: relayd records "<Error>: <message>" as the
// reason.
//
// --pool: a pre-started process (doc/sandbox.md, "Warm sandboxes"): node
// and this script are loaded before an invocation exists; stdin then
// carries five lines, MODULE.FUNCTION, the message id, the attempt's
// traceparent, tracestate and baggage (each but the first may be
// empty), set as RELAY_HANDLER, RELAY_MESSAGE_ID, TRACEPARENT,
// TRACESTATE and BAGGAGE (only when not empty), followed by the event
// (the warm protocol, version 2: sandbox/warm_proto.h). From there it is
// exactly a cold start.
//
// --serve [LIB]: the node warm fork server (doc/sandbox.md, "Warm
// sandboxes"; started by relayd with RELAY_WARM_NODE=fork). LIB (default
// /run/relay-warm-slot.so) is the node addon of warm_node.c, whose
// serve() never returns in the server; it returns in each invocation
// process, a fresh fork of this one, which repairs what a fork of node
// leaves shared (afterFork(): the event loop's epoll instance; random
// state: OpenSSL's, and Math.random, which V8 seeded once for every
// fork), takes its request (handler, environment, stdio) and from there
// runs exactly as a cold start.
'use strict';

const fs = require('fs');
const path = require('path');
const { pathToFileURL } = require('url');

function usage() {
	process.stderr.write('usage: relay-bootstrap.js MODULE.FUNCTION\n');
	process.exit(2);
}

// The learning fork of the node fork server (warm_node_prefault.c):
// what every invocation writes after its request is learned from a fork
// that runs this file's invocation path on a handler of its own, compiled
// as a handler module is, from this file (in every sandbox); it writes a
// line as a handler does. No application code runs in it.
let learning = false;

function learnModule() {
	const Module = require('module');
	const src = fs.readFileSync(__filename, 'utf8');
	const m = new Module(__filename, null);
	m.filename = __filename;
	m.paths = Module._nodeModulePaths(__dirname);
	m._compile('exports.noop = (event) => { process.stdout.write(' +
		   `JSON.stringify({ event, n: ${src.length} }) + '\\n'); };`,
		   __filename);
	return m.exports;
}

// The file of handler module @base and its extension, or null.
function findModule(base) {
	for (const ext of ['.js', '.cjs', '.mjs', '/index.js']) {
		const file = base + ext;
		if (fs.existsSync(file))
			return { file, ext };
	}
	return null;
}

async function load(base) {
	if (learning)
		return learnModule();
	const found = findModule(base);
	if (found) {
		const { file, ext } = found;
		if (ext === '.mjs')
			return import(pathToFileURL(file).href);
		try {
			return require(file);
		} catch (e) {
			if (e && e.code === 'ERR_REQUIRE_ESM')
				return import(pathToFileURL(file).href);
			throw e;
		}
	}
	const rel = path.relative(process.cwd(), base);
	const err = new Error(`Cannot find handler module './${rel}'`);
	err.code = 'MODULE_NOT_FOUND';
	throw err;
}

// Where stdin is read into: made once (in the node fork server before
// its first fork, so an invocation writes into pages it already has
// rather than allocating 64 KiB per read as fs.readFileSync(0) does).
let inbuf = null;

// All of stdin (fd 0; @fd in a rehearsal), up to its end, as a Buffer.
function readStdin(fd = 0) {
	if (inbuf === null)
		inbuf = Buffer.allocUnsafe(65536);
	let len = 0;
	for (;;) {
		if (len === inbuf.length) {
			const bigger = Buffer.allocUnsafe(inbuf.length * 2);
			inbuf.copy(bigger, 0, 0, len);
			inbuf = bigger;
		}
		const n = fs.readSync(fd, inbuf, len, inbuf.length - len, null);
		if (n === 0)
			break;
		len += n;
	}
	return Buffer.from(inbuf.subarray(0, len));
}

// The five header lines of --pool, taken off @raw.
function poolHeader(raw) {
	const names = ['RELAY_HANDLER', 'RELAY_MESSAGE_ID', 'TRACEPARENT',
		'TRACESTATE', 'BAGGAGE'];
	let at = 0;
	for (const name of names) {
		const nl = raw.indexOf(10, at);
		if (nl < 0) {
			process.stderr.write(
				'relay-bootstrap: no invocation header\n');
			process.exit(2);
		}
		const value = raw.subarray(at, nl).toString('utf8');
		delete process.env[name];
		if (value !== '' || name === 'RELAY_HANDLER')
			process.env[name] = value;
		at = nl + 1;
	}
	process.argv[2] = process.env.RELAY_HANDLER;
	return raw.subarray(at);
}

// The warm protocol version (sandbox/warm_proto.h) this file follows.
const WARM_PROTO_VERSION = 2;

// Tell relayd on the control socket (fd 3) that this sandbox cannot run
// node invocations warm ("N reason": they run cold), and exit.
function refuse(why) {
	try {
		fs.writeSync(3, Buffer.from(`N\0${why}\0`));
	} catch (e) {
		process.stderr.write(`relay-bootstrap: ${why}\n`);
	}
	process.exit(0);
}

// Math.random of a forked invocation: V8 seeded its generator once, in
// the server, so every fork would draw the same sequence. This one draws
// from OpenSSL's generator (reseeded per fork by afterFork()), 53 bits a
// number as V8's. Made and installed in the server (so that its code is
// compiled there, once, not in each fork); each fork calls reset()
// before anything of it can draw, so that no number the server might
// have drawn into the pool is any fork's.
function forkedMathRandom(crypto) {
	const pool = new Uint32Array(256);
	let next = pool.length;
	return {
		random() {
			if (next >= pool.length) {
				crypto.randomFillSync(pool);
				next = 0;
			}
			const hi = pool[next++] >>> 5;
			const lo = pool[next++] >>> 6;
			return (hi * 67108864 + lo) / 9007199254740992;
		},
		reset() {
			next = pool.length;
		},
	};
}

// The invocation's environment: exactly @list ("K=V"), PWD as bwrap set
// it for the server (and a cold start).
function takeEnv(list) {
	const pwd = process.env.PWD;
	for (const k of Object.keys(process.env))
		delete process.env[k];
	for (const kv of list) {
		const i = kv.indexOf('=');
		if (i > 0 && kv.slice(0, i) !== 'PWD')
			process.env[kv.slice(0, i)] = kv.slice(i + 1);
	}
	if (pwd !== undefined)
		process.env.PWD = pwd;
}

// Run once in the server what every invocation runs before its
// handler: read an event from a descriptor (readStdin()'s buffer made
// here), parse it, find and compile a
// CommonJS module (without running or caching one). V8 compiles a
// function on its first call; compiled here, the code is every fork's,
// instead of compiled again (and its pages copied) in each. No thread,
// no random draw, nothing left open or cached.
function warmPaths() {
	const Module = require('module');
	const fd = fs.openSync('/dev/null', 'r');
	inbuf = Buffer.allocUnsafe(65536).fill(0);
	try {
		fs.readSync(fd, inbuf, 0, inbuf.length, null);
	} finally {
		fs.closeSync(fd);
	}
	Buffer.from(inbuf.subarray(0, 2));
	JSON.parse(Buffer.from('{"relay":[1,"x",null,true]}').toString('utf8'));
	fs.existsSync(__filename);
	require.resolve(__filename);
	const src = fs.readFileSync(__filename, 'utf8');
	const m = new Module(__filename, null);
	m.filename = __filename;
	m.paths = Module._nodeModulePaths(__dirname);
	m._compile(`exports.f = () => ${src.length};`, __filename);
	path.join(process.cwd(), ...'a.b'.split('.'));
	path.relative(process.cwd(), __filename);
}

// An invocation process's rehearsal, before its request (doc/sandbox.md,
// "node: a fork server", "Rehearsed before the request"): the steps its
// request will take, on made-up input of this file's own, so that the
// pages they read and write (node's and V8's code, the heap, the
// allocator's) are this process's before the request comes, not after
// it. A fork touching a page for the first time is what a forked
// invocation's start mostly costs on a host whose page tables the
// hypervisor shadows, fault or no fault (doc/perf/warm.md, round 11).
// It runs no application code, reads only /dev/null and this file,
// writes nothing (an empty write to the server's stdout), changes
// nothing the invocation can see (the environment is set to what it
// is, no module is cached, no thread started, no random number drawn)
// and is skipped at the first error: the invocation is the same without
// it, only slower. The server runs it once too, before its first fork
// (serve()), for the code it compiles.
function rehearse(zy) {
	let fd = -1;
	try {
		zy.rehearse();
		takeEnv(Object.entries(process.env).map(([k, v]) => `${k}=${v}`));
		fd = fs.openSync('/dev/null', 'r');
		parseEvent(readStdin(fd));
		parseEvent(Buffer.from('{"relay":[1,"x",null,true]}'));
		findModule(path.join(process.cwd(), ...'relay-rehearsal.none'.split('.')));
		path.relative(process.cwd(), __filename);
		void learnModule().noop;
		process.stdout.write('');
	} catch (e) {
		// Only slower.
	} finally {
		if (fd >= 0)
			fs.closeSync(fd);
	}
}

// --serve: returns (with process.argv[2] the handler) only in an
// invocation process.
function serve(lib) {
	const mod = { exports: {} };
	try {
		process.dlopen(mod, lib);
	} catch (e) {
		refuse(`cannot load the node fork server ${lib}: ${e.message}`);
	}
	const zy = mod.exports;
	if (typeof zy.serve !== 'function')
		refuse(`${lib} has no node fork server`);
	if (zy.protoVersion() !== WARM_PROTO_VERSION)
		refuse(`the node fork server speaks warm protocol version ` +
		       `${zy.protoVersion()}, this bootstrap ${WARM_PROTO_VERSION}`);
	// Loaded once, for every invocation: what a handler commonly
	// needs. Nothing here may start a thread (libuv's pool) or draw
	// random numbers.
	const crypto = require('crypto');
	require('util');
	require('events');
	// process.stdout and process.stderr, made here on the server's own
	// descriptors as a pre-started process makes them before its
	// event: an invocation's stdio are put on fds 0-2 (dup2), so the
	// same streams write to the invocation's. Made in each fork, they
	// (node's net and streams) were a quarter of a no-op invocation.
	void process.stdout;
	void process.stderr;
	warmPaths();
	// What every fork did before its request, done here once, before
	// the first fork: made in each fork, its functions were compiled
	// and its objects and hidden classes made again in each, page
	// faults all (doc/perf/warm.md, round 9). The server itself never
	// emits 'exit', exits through node or draws a random number.
	// The code node would exit with, for the fork's own exit (node's
	// would join platform threads the fork does not have): set once
	// the 'exit' listeners ran, and by process.exit().
	const emit = process.emit;
	process.emit = function (ev, ...args) {
		const r = Reflect.apply(emit, this, [ev, ...args]);
		if (ev === 'exit')
			zy.setExitCode(process.exitCode ?? args[0] ?? 0);
		return r;
	};
	const reallyExit = process.reallyExit;
	process.reallyExit = function (code) {
		zy.setExitCode(code ?? 0);
		return Reflect.apply(reallyExit, this, [code]);
	};
	const rnd = forkedMathRandom(crypto);
	Math.random = rnd.random;
	rnd.reset();
	// takeEnv() compiled (the server's environment set to itself).
	takeEnv(Object.entries(process.env).map(([k, v]) => `${k}=${v}`));
	// The rehearsal once here: every function it calls for the first
	// time is compiled here, once, instead of in each invocation
	// process's own rehearsal (lazy compilation was 13 % of a warm
	// invocation's CPU at concurrency 8; doc/perf/warm.md, round 13).
	// Called once only: run more often, V8 gives the functions
	// feedback vectors, which every fork then writes (copies).
	rehearse(zy);
	zy.serve();
	// An invocation process, single-threaded, capabilities dropped.
	zy.afterFork();
	rnd.reset();
	rehearse(zy);
	process.execArgv = [];
	const req = zy.request();
	takeEnv(req.env);
	process.argv.length = 2;
	learning = req.learn === true;
	process.argv.push(learning ? 'relay-learn.noop' : req.handler);
	return zy;
}

// The event in @raw (null when blank); throws when it is not JSON.
function parseEvent(raw) {
	const text = raw.toString('utf8');
	return text.trim() !== '' ? JSON.parse(text) : null;
}

async function main() {
	const pool = process.argv.length === 3 && process.argv[2] === '--pool';
	if (pool) {
		// node makes process.stdout and process.stderr on first use,
		// about 3 ms; a pre-started process makes them before the
		// event comes (the same streams on the same descriptors).
		void process.stdout;
		void process.stderr;
	}
	let raw = readStdin();
	if (pool)
		raw = poolHeader(raw);
	const target = process.argv[2] || '';
	const dot = target.lastIndexOf('.');
	if (process.argv.length !== 3 || dot <= 0 || dot === target.length - 1)
		usage();
	const modName = target.slice(0, dot);
	const fnName = target.slice(dot + 1);
	let event = null;
	try {
		event = parseEvent(raw);
	} catch (e) {
		process.stderr.write(
			`relay-bootstrap: event is not valid JSON: ${e.message}\n`);
		process.exit(1);
	}
	let fn;
	try {
		const mod = await load(path.join(process.cwd(),
						 ...modName.split('.')));
		fn = mod[fnName] !== undefined ? mod[fnName]
			: (mod.default && mod.default[fnName]);
		if (typeof fn !== 'function')
			throw new TypeError(
				`${modName}: export '${fnName}' is not a function`);
	} catch (err) {
		loadFailed(err);
	}
	await fn(event);
}

// The last stderr line when the handler cannot be loaded (the runtime
// makes the rest of it the invocation's failure reason:
// RELAY__LOAD_ERROR_MARK in librelay/runtime/runtime.h).
const LOAD_ERROR_MARK = 'relay-bootstrap: cannot load handler: ';

function loadFailed(err) {
	let first;
	if (err instanceof Error) {
		const msg = String(err.message).split('\n')[0].trim();
		first = msg ? `${err.name}: ${msg}` : err.name;
	} else {
		first = String(err).split('\n')[0];
	}
	process.stderr.write(
		`${err && err.stack ? err.stack : String(err)}\n` +
		`${LOAD_ERROR_MARK}${first}\n`);
	process.exit(1);
}

if (process.argv[2] === '--serve' && process.argv.length <= 4)
	serve(process.argv[3] || '/run/relay-warm-slot.so');

main().then(() => {
	if (process.exitCode === undefined)
		process.exitCode = 0;
}, (err) => {
	process.stderr.write(
		`${err && err.stack ? err.stack : String(err)}\n`);
	process.exit(1);
});
