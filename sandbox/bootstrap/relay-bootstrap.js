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
'use strict';

const fs = require('fs');
const path = require('path');
const { pathToFileURL } = require('url');

function usage() {
	process.stderr.write('usage: relay-bootstrap.js MODULE.FUNCTION\n');
	process.exit(2);
}

async function load(base) {
	for (const ext of ['.js', '.cjs', '.mjs', '/index.js']) {
		const file = base + ext;
		if (!fs.existsSync(file))
			continue;
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

async function main() {
	const pool = process.argv.length === 3 && process.argv[2] === '--pool';
	if (pool) {
		// node makes process.stdout and process.stderr on first use,
		// about 3 ms; a pre-started process makes them before the
		// event comes (the same streams on the same descriptors).
		void process.stdout;
		void process.stderr;
	}
	let raw = fs.readFileSync(0);
	if (pool)
		raw = poolHeader(raw);
	const target = process.argv[2] || '';
	const dot = target.lastIndexOf('.');
	if (process.argv.length !== 3 || dot <= 0 || dot === target.length - 1)
		usage();
	const modName = target.slice(0, dot);
	const fnName = target.slice(dot + 1);
	let event = null;
	if (raw.toString('utf8').trim() !== '') {
		try {
			event = JSON.parse(raw.toString('utf8'));
		} catch (e) {
			process.stderr.write(
				`relay-bootstrap: event is not valid JSON: ${e.message}\n`);
			process.exit(1);
		}
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

main().then(() => {
	if (process.exitCode === undefined)
		process.exitCode = 0;
}, (err) => {
	process.stderr.write(
		`${err && err.stack ? err.stack : String(err)}\n`);
	process.exit(1);
});
