// Handlers of the node warm fork server tests (test_warm_node.c). Each
// prints lines the test compares between warm and cold invocations;
// lines starting "rand " differ per invocation, "warm " are only
// checked warm.
'use strict';
const fs = require('fs');
const { execFileSync, spawn } = require('child_process');

let counter = 0;

exports.state = async (ev) => {
	const threads = fs.readdirSync('/proc/self/task').length;
	counter++;
	globalThis.relayCounter = (globalThis.relayCounter || 0) + 1;
	console.log(`counter ${counter} ${globalThis.relayCounter} ${ev.n}`);
	console.log(`tmp ${JSON.stringify(fs.readdirSync('/tmp'))}`);
	fs.writeFileSync('/tmp/left-behind', 'x');
	console.log(`procs ${JSON.stringify(fs.readdirSync('/proc')
		.filter((p) => /^[0-9]+$/.test(p)))}`);
	console.log(`pid ${process.pid} ppid ${process.ppid}`);
	console.log(`env ${JSON.stringify(Object.keys(process.env).sort())}`);
	console.log(`handler ${process.env.RELAY_HANDLER} ` +
		    `${process.env.RELAY_MESSAGE_ID} ${process.env.LEAK}`);
	process.env.LEAK = 'leaked';
	console.log(`argv ${process.argv.slice(2).join(' ')} ` +
		    `execArgv ${JSON.stringify(process.execArgv)}`);
	console.log(`signals ${process.listenerCount('SIGTERM')} ` +
		    `${process.listenerCount('SIGINT')}`);
	process.on('SIGTERM', () => {});
	const st = fs.readFileSync('/proc/self/status', 'utf8');
	console.log(`caps ${st.match(/CapEff:.*/)[0]}`);
	console.log(`fds ${JSON.stringify(fs.readdirSync('/proc/self/fd')
		.map(Number).filter((f) => f <= 2))}`);
	console.log(`rand ${Math.random()} ${require('crypto').randomUUID()} ` +
		    `${require('crypto').randomBytes(8).toString('hex')}`);
	console.log(`warm-threads ${threads}`);
	// What may not cross into the next invocation: a timer, a pending
	// promise, a detached child process.
	setTimeout(() => console.log('timer from an earlier invocation'),
		   60000).unref();
	globalThis.relayPending = new Promise(() => {});
	spawn('sleep', ['31999'], { detached: true, stdio: 'ignore' }).unref();
	await new Promise((r) => setTimeout(r, 5));
	console.log('done');
};

exports.ok = (ev) => {
	console.log(`ok ${JSON.stringify(ev)}`);
};

exports.exit3 = () => {
	process.exit(3);
};

exports.exitCode = () => {
	process.exitCode = 4;
	process.on('exit', (c) => console.log(`exit event ${c}`));
};

exports.throws = () => {
	throw new Error('boom');
};

exports.uncaught = () => {
	setTimeout(() => {
		throw new Error('late boom');
	}, 1);
};

exports.rejects = () => {
	Promise.reject(new Error('nobody catches this'));
	return new Promise((r) => setTimeout(r, 20));
};

exports.forever = () => {
	for (;;)
		;
};

// The node features a handler uses, each after the fork: "ok NAME".
exports.features = async () => {
	const zlib = require('zlib');
	const crypto = require('crypto');
	const dns = require('dns');
	const { Worker } = require('worker_threads');
	const util = require('util');
	const say = (w) => console.log(`ok ${w}`);

	fs.writeFileSync('/tmp/f', 'data');
	if (fs.readFileSync('/tmp/f', 'utf8') === 'data')
		say('fs-sync');
	if (await fs.promises.readFile('/tmp/f', 'utf8') === 'data')
		say('fs-async');
	await new Promise((r) => setTimeout(r, 2));
	await new Promise((r) => setImmediate(r));
	say('timers');
	const gz = await util.promisify(zlib.gzip)('hello');
	if ((await util.promisify(zlib.gunzip)(gz)).toString() === 'hello')
		say('zlib-async');
	if (zlib.gunzipSync(zlib.gzipSync('x')).toString() === 'x')
		say('zlib-sync');
	const key = await util.promisify(crypto.pbkdf2)('p', 's', 1, 16,
							 'sha256');
	if (key.length === 16)
		say('crypto-async');
	if (crypto.createHash('sha256').update('a').digest('hex').length === 64)
		say('crypto-sync');
	const addr = await util.promisify(dns.lookup)('localhost');
	if (addr)
		say('dns');
	const w = new Worker('require("worker_threads").parentPort' +
			     '.postMessage(6 * 7)', { eval: true });
	const got = await new Promise((res, rej) => {
		w.once('message', res);
		w.once('error', rej);
	});
	await w.terminate();
	if (got === 42)
		say('worker_threads');
	if (execFileSync('/bin/echo', ['hi']).toString() === 'hi\n')
		say('child_process-sync');
	const out = await new Promise((res) => {
		const c = spawn('/bin/echo', ['there']);
		let b = '';
		c.stdout.on('data', (d) => { b += d; });
		c.on('close', () => res(b));
	});
	if (out === 'there\n')
		say('child_process-async');
	const http = require('http');
	const srv = http.createServer((req, res) => res.end('pong'));
	await new Promise((r) => srv.listen(0, '127.0.0.1', r));
	const url = `http://127.0.0.1:${srv.address().port}/`;
	const viaHttp = await new Promise((res, rej) => {
		http.get(url, (r) => {
			let b = '';
			r.on('data', (d) => { b += d; });
			r.on('end', () => res(b));
		}).on('error', rej);
	});
	if (viaHttp === 'pong')
		say('http');
	await new Promise((r) => srv.close(r));
	const m = await import('./esm.mjs');
	if (m.value === 'esm')
		say('esm-import');
	console.log('features done');
};

exports.slow = async () => {
	await new Promise((r) => setTimeout(r, 800));
	console.log('slow done');
};

// fetch (undici parses HTTP with WebAssembly): see test_warm_node.c,
// test_node__fetch_and_wasm_same_as_cold.
exports.fetch = async () => {
	const http = require('http');
	const srv = http.createServer((req, res) => res.end('pong'));
	await new Promise((r) => srv.listen(0, '127.0.0.1', r));
	const url = `http://127.0.0.1:${srv.address().port}/`;
	console.log(`fetch ${await (await fetch(url)).text()}`);
	srv.closeAllConnections();
	await new Promise((r) => srv.close(r));
};

// fetch, many times, bodies of 64 KiB: hot enough for V8 to tier the
// HTTP parser's WebAssembly up, were it allowed to.
exports.fetchMany = async () => {
	const http = require('http');
	const body = 'x'.repeat(65536);
	const srv = http.createServer((req, res) => res.end(body));
	await new Promise((r) => srv.listen(0, '127.0.0.1', r));
	const url = `http://127.0.0.1:${srv.address().port}/`;
	let total = 0;
	for (let i = 0; i < 200; i++)
		total += (await (await fetch(url)).text()).length;
	console.log(`fetched ${total}`);
	srv.closeAllConnections();
	await new Promise((r) => srv.close(r));
};

// A WebAssembly module of @n functions, function i returning i (each
// exported as "f<i>").
function wasmModule(n) {
	const leb = (v) => {
		const out = [];
		do {
			let b = v & 0x7f;
			v >>>= 7;
			if (v)
				b |= 0x80;
			out.push(b);
		} while (v);
		return out;
	};
	const sleb = (v) => {
		const out = [];
		for (;;) {
			const b = v & 0x7f;
			v >>= 7;
			if ((v === 0 && !(b & 0x40)) || (v === -1 && (b & 0x40))) {
				out.push(b);
				return out;
			}
			out.push(b | 0x80);
		}
	};
	const section = (id, body) => [id, ...leb(body.length), ...body];
	const vec = (items) => [...leb(items.length), ...items.flat()];
	const name = (s) => [...leb(s.length), ...Buffer.from(s)];
	const idx = [...Array(n).keys()];
	const code = idx.map((i) => {
		const b = [0, 0x41, ...sleb(i), 0x0b];
		return [...leb(b.length), ...b];
	});
	return new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0,
		...section(1, vec([[0x60, 0, 1, 0x7f]])),
		...section(3, vec(idx.map(() => [0]))),
		...section(7, vec(idx.map((i) => [...name(`f${i}`), 0,
						   ...leb(i)]))),
		...section(10, vec(code))]);
}

// The handler's own WebAssembly, compiled synchronously and not.
exports.wasm = async () => {
	const bytes = wasmModule(3000);
	const inst = new WebAssembly.Instance(new WebAssembly.Module(bytes));
	console.log(`wasm sync ${inst.exports.f7()}`);
	const { instance } = await WebAssembly.instantiate(bytes);
	console.log(`wasm async ${instance.exports.f2999()}`);
};

// Stuck as a fork-made hang leaves an invocation (test_warm_node.c,
// test_node__hang_replaces_parent): its only thread waits on a futex,
// with no timeout, that nothing will ever wake.
exports.stuck = () => {
	console.log('stuck');
	Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
};

// The pages this invocation process populated before its request (the
// fork server's addon, bound in every warm sandbox; "none" cold), and a
// page-sized object made and checked, as any handler's first writes.
exports.prefault = (ev) => {
	let n = 'none';
	try {
		const m = { exports: {} };
		process.dlopen(m, '/run/relay-warm-slot.so');
		n = m.exports.prefaulted();
	} catch (e) {
		n = 'none';
	}
	const a = new Array(1024).fill(ev.n);
	console.log(`warm-prefaulted ${n}`);
	console.log(`sum ${a.reduce((x, y) => x + y, 0)}`);
};

// Whether this invocation process rehearsed its request's steps before
// the request came and the server before its first fork (the fork
// server's addon; "none" cold), and what a
// rehearsal could have left behind, each line compared with cold's: the
// bytes written to stdout before the handler's own, the environment,
// the module cache, the main module's children, the descriptors.
exports.rehearsed = (ev) => {
	const bytes = process.stdout.bytesWritten;
	const path = require('path');
	let n = 'none';
	try {
		const m = { exports: {} };
		process.dlopen(m, '/run/relay-warm-slot.so');
		n = `${m.exports.rehearsed()} server ` +
			`${m.exports.serverRehearsed()}`;
	} catch (e) {
		n = 'none';
	}
	console.log(`stdout written ${bytes}`);
	console.log(`event ${JSON.stringify(ev)}`);
	console.log(`env ${JSON.stringify(Object.keys(process.env).sort())}`);
	console.log(`cache ${JSON.stringify(Object.keys(require.cache)
		.map((k) => path.basename(k)))}`);
	console.log(`children ${JSON.stringify(require.main.children
		.map((c) => path.basename(c.id)))}`);
	console.log(`fds ${JSON.stringify(fs.readdirSync('/proc/self/fd'))}`);
	console.log(`warm-rehearsed ${n}`);
};

// MiB of node's code and read-only data the fork server put on huge
// pages (the addon; "none" cold), whether this process's own memory map
// shows huge pages, and some of node's code at work (a hash, a deflate,
// a stack trace), output compared with cold's.
exports.hugeText = () => {
	let n = 'none';
	try {
		const m = { exports: {} };
		process.dlopen(m, '/run/relay-warm-slot.so');
		n = m.exports.hugeText();
	} catch (e) {
		n = 'none';
	}
	const rollup = fs.readFileSync('/proc/self/smaps_rollup', 'utf8');
	const kb = Number((rollup.match(/AnonHugePages:\s+(\d+)/) || [0, 0])[1]);
	const data = Buffer.alloc(4096, 'relay');
	console.log(`sha256 ${require('crypto').createHash('sha256')
		.update(data).digest('hex')}`);
	console.log(`deflated ${require('zlib').deflateSync(data).length}`);
	console.log(`stack ${new Error('x').stack.split('\n').length > 1}`);
	console.log(`warm-huge ${n} ${kb > 0 ? 'mapped' : 'none'}`);
};

// LD_BIND_NOW in this process's initial environment (/proc/self/environ:
// the node fork server's, for a forked invocation; "none" when absent)
// and in the handler's (process.env), compared with cold's.
exports.bindNow = () => {
	const initial = fs.readFileSync('/proc/self/environ', 'latin1')
		.split('\0').find((kv) => kv.startsWith('LD_BIND_NOW='));
	console.log(`warm-initial ${initial === undefined ? 'none' : initial}`);
	console.log(`env LD_BIND_NOW ${process.env.LD_BIND_NOW}`);
};
