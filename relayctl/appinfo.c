/*
 * appinfo.c - relayd's app list and template file times for relayctl.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "appinfo.h"
#include "ctlsock.h"
#include "relayctl.h"

int appinfo_fetch(const struct relayctl_conf *c, const char *cmd,
		  json_t **apps)
{
	char path[4200], why[1024];
	json_t *req, *resp;
	int fd;

	*apps = NULL;
	fd = relayctl_ctl_connect(relayctl_sock_path(c, path, sizeof(path)),
				  why, sizeof(why));
	if (fd < 0) {
		if (errno == ENOENT || errno == ECONNREFUSED)
			return 0;
		relayctl_error(RELAYCTL_FAIL, "%s: %s", cmd, why);
		return -1;
	}
	req = json_pack("{s:s}", "cmd", "apps");
	resp = req ? relayctl_ctl_request(fd, req, 30000, why, sizeof(why))
		   : NULL;
	json_decref(req);
	close(fd);
	if (!resp || relayctl_ctl_failed(resp, why, sizeof(why)) ||
	    !json_is_array(json_object_get(resp, "apps"))) {
		if (resp && json_is_true(json_object_get(resp, "ok")))
			snprintf(why, sizeof(why), "relayd's answer has no "
				 "\"apps\" list");
		json_decref(resp);
		relayctl_error(RELAYCTL_FAIL, "%s: relayd: %s", cmd, why);
		return -1;
	}
	*apps = json_incref(json_object_get(resp, "apps"));
	json_decref(resp);
	return 1;
}

json_t *appinfo_find(json_t *apps, const char *name)
{
	json_t *a;
	size_t i;

	json_array_foreach(apps, i, a) {
		const char *n = json_string_value(json_object_get(a, "name"));

		if (n && strcmp(n, name) == 0)
			return a;
	}
	return NULL;
}

const char *appinfo_status(const char *status)
{
	if (!status)
		return "unknown";
	return strcmp(status, "ok") == 0 ? "ready" : status;
}

int64_t appinfo_mtime(const char *dir)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/template.yaml", dir);
	if (stat(path, &st) != 0)
		return -1;
	return (int64_t)st.st_mtim.tv_sec * 1000 +
	       st.st_mtim.tv_nsec / 1000000;
}

const char *appinfo_dir(const char *apps, const char *name, char *buf,
			size_t size)
{
	size_t n = strlen(apps);

	while (n > 1 && apps[n - 1] == '/')
		n--;
	snprintf(buf, size, "%.*s/%s", (int)n, apps, name);
	return buf;
}
