'use strict';
exports.handler = async (event) => {
	console.log(`node got ${event.event_name}`);
};
