// Node handlers used by tests/runtime (module "events.created").
'use strict';

exports.handler = (event) => {
	console.log(`name=${event.name}`);
};

exports.fail = () => {
	throw new Error('boom');
};

exports.exit3 = () => {
	process.exit(3);
};

exports.later = async (event) => {
	await new Promise((resolve) => setTimeout(resolve, 10));
	console.log(`async ${event.n}`);
};
