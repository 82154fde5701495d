/*
 * ctlsock.h - a client of relayd's control socket (doc/protocol.md): one
 * JSON object per line each way, answered in order on a connection.
 */
#ifndef RELAYCTL_CTLSOCK_H
#define RELAYCTL_CTLSOCK_H

#include <stddef.h>

#include <jansson.h>

/*
 * Connect to the unix socket @path. Returns a file descriptor, or -1 with
 * errno set and @why holding "cannot reach relayd control socket PATH:
 * reason" (one line).
 */
int relayctl_ctl_connect(const char *path, char *why, size_t size);

/*
 * Send @req (borrowed) on @fd and read one response line, waiting at most
 * @timeout_ms (0 = as long as it takes: handlers may run for minutes).
 * Returns the parsed response object (new reference), or NULL with @why
 * set. The response may be {"ok":false,...}: see relayctl_ctl_failed().
 */
json_t *relayctl_ctl_request(int fd, json_t *req, int timeout_ms, char *why,
			     size_t size);

/*
 * Connect, send one request, close. Returns the response or NULL (@why).
 * Steals @req.
 */
json_t *relayctl_ctl_call(const char *path, json_t *req, int timeout_ms,
			  char *why, size_t size);

/*
 * When @resp says "ok": false, write "message (error)" to @why and return
 * its error code (a borrowed string); else return NULL.
 */
const char *relayctl_ctl_failed(json_t *resp, char *why, size_t size);

/* The string member @key of @o, or @dflt when absent or not a string. */
const char *relayctl_jstr(json_t *o, const char *key, const char *dflt);

/*
 * The handler output lines relayd sent back in @resp ("output", for a
 * request with "output": true, doc/protocol.md), as app run prints them:
 * stdout lines on stdout, stderr lines on stderr, each with its
 * "[app/handler@manual] stdout: " prefix; then, when relayd left lines
 * out, "relayctl: CMD: N more output lines not shown (relayd's log has
 * them)" on stderr. An older relayd sends none: nothing is printed.
 */
void relayctl_put_run_output(json_t *resp, const char *cmd);

#endif /* RELAYCTL_CTLSOCK_H */
