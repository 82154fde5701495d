/*
 * appinfo.h - what relayctl app ls / inspect share: relayd's view of the
 * apps ({"cmd":"apps"}, doc/protocol.md) and the template files on disk.
 */
#ifndef RELAYCTL_APPINFO_H
#define RELAYCTL_APPINFO_H

#include <stdint.h>

#include <jansson.h>

#include "ctlconf.h"

/*
 * Ask the running relayd for its apps. Returns 1 with *apps set (the
 * "apps" array, a new reference), 0 when relayd is not running (no
 * control socket, or nobody listening on it), or -1 after printing the
 * problem naming @cmd.
 */
int appinfo_fetch(const struct relayctl_conf *c, const char *cmd,
		  json_t **apps);

/* The member of @apps named @name (borrowed), or NULL. */
json_t *appinfo_find(json_t *apps, const char *name);

/* What relayctl shows for relayd's app status: "ok" is "ready". */
const char *appinfo_status(const char *status);

/* The modification time of @dir/template.yaml in Unix ms, or -1. */
int64_t appinfo_mtime(const char *dir);

/* "<dir>/<name>" into @buf. */
const char *appinfo_dir(const char *apps, const char *name, char *buf,
			size_t size);

#endif /* RELAYCTL_APPINFO_H */
