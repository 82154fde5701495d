/*
 * preload_probe.c - the library a hostile template names in LD_PRELOAD
 * (test_sec_env.c). Wherever a dynamic loader maps it, its constructor
 * appends "loaded PID" to the file $RELAY_PROBE_MARK names. The test
 * puts that file where only a process on the host can write: a line in
 * it means a template's environment steered a host-side loader.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void relay_probe_loaded(void) __attribute__((constructor));

void relay_probe_loaded(void)
{
	const char *mark = getenv("RELAY_PROBE_MARK");
	char line[64];
	int fd, n;

	if (!mark)
		return;
	fd = open(mark, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0)
		return;
	n = snprintf(line, sizeof(line), "loaded %ld\n", (long)getpid());
	if (n > 0 && write(fd, line, (size_t)n) < 0)
		n = 0;
	close(fd);
}
