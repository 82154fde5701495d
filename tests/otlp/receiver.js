// receiver.js - a local OTLP/HTTP receiver for tests/otlp/test_otlp.py.
//
//   node receiver.js MODULES_DIR MODE PORTFILE OUTFILE
//
// Decodes every POST body with the OpenTelemetry project's own protobuf
// definitions (the generated code @opentelemetry/otlp-transformer ships,
// installed under MODULES_DIR), never with our encoder's inverse, and
// appends one JSON line per request to OUTFILE: the path, the headers'
// names, the content type, the decoded request (ids as hex) or the
// decoding error. MODE: ok, 500, 503 (with Retry-After: 1, then ok),
// slow (answers after 3 s), hang (never answers).
'use strict';
const http = require('http');
const fs = require('fs');
const path = require('path');

const [modules, mode, portFile, outFile] = process.argv.slice(2);
const root = require(path.join(modules, 'node_modules', '@opentelemetry',
	'otlp-transformer', 'build', 'src', 'generated', 'root.js'));
const Req = root.opentelemetry.proto.collector.trace.v1
	.ExportTraceServiceRequest;
let count = 0;

const server = http.createServer((req, res) => {
	const chunks = [];
	req.on('data', (c) => chunks.push(c));
	req.on('end', () => {
		count++;
		const body = Buffer.concat(chunks);
		const rec = { path: req.url, method: req.method,
			content_type: req.headers['content-type'],
			header_names: Object.keys(req.headers),
			auth: req.headers['authorization'] || null };
		try {
			const msg = Req.decode(body);
			rec.request = Req.toObject(msg, { longs: String,
				enums: Number, bytes: String, defaults: false });
			const hex = (b) => Buffer.from(b, 'base64')
				.toString('hex');
			for (const rs of rec.request.resourceSpans || [])
				for (const ss of rs.scopeSpans || [])
					for (const s of ss.spans || []) {
						s.traceId = hex(s.traceId);
						s.spanId = hex(s.spanId);
						if (s.parentSpanId)
							s.parentSpanId = hex(s.parentSpanId);
						for (const l of s.links || []) {
							l.traceId = hex(l.traceId);
							l.spanId = hex(l.spanId);
						}
					}
		} catch (e) {
			rec.error = String(e);
		}
		fs.appendFileSync(outFile, JSON.stringify(rec) + '\n');
		if (mode === 'hang')
			return;
		if (mode === 'slow') {
			setTimeout(() => { res.writeHead(200); res.end(); },
				3000);
			return;
		}
		if (mode === '500') {
			res.writeHead(500);
			res.end('no');
			return;
		}
		if (mode === '503' && count === 1) {
			res.writeHead(503, { 'Retry-After': '1' });
			res.end();
			return;
		}
		res.writeHead(200,
			{ 'Content-Type': 'application/x-protobuf' });
		res.end();
	});
});
server.listen(0, '127.0.0.1', () => {
	fs.writeFileSync(portFile, String(server.address().port));
});
