'use strict';
// alerts.send - format an alert for a failed health check.
//
// A real app would POST to a chat or paging webhook (network: true allows
// it); the example prints the message so it runs anywhere.

function send(event) {
  const r = event.result;
  const what = r.status === 'FAILED'
    ? 'is down'
    : `is degraded (${r.attempts} checks in a row)`;
  console.log(`ALERT ${event.service} ${what}`);
}

module.exports = { send };
