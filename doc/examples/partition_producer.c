/*
 * partition_producer.c - which partition a producer writes an event to.
 *
 * With REDIS_STREAM naming several streams (doc/configuration.md C-8),
 * the producer picks the stream. The documented rule, which relayd's
 * schedule publisher also follows, is relay_stream_partition(): FNV-1a-32
 * of a key (an order id, a customer id) modulo the number of streams, in
 * the order relay_stream_list_parse() gives them. Events of one key then
 * always land in one partition.
 *
 * For each key read from standard input (one per line) this prints the
 * stream to XADD to, and the redis-cli command that would do it:
 *
 *	$ cc partition_producer.c $(pkg-config --cflags --libs librelay) \
 *		-o partition_producer
 *	$ echo order-42 | ./partition_producer 'orders{0..3}'
 *	order-42 orders:{p0}
 *	  redis-cli XADD 'orders:{p0}' '*' event '{"order":"order-42"}'
 *
 * A real producer passes the same stream name to its Redis client's XADD.
 *
 * Usage: partition_producer REDIS_STREAM
 * Exit status: 0, 1 for an invalid REDIS_STREAM value, 2 usage error.
 * Plain C99 plus POSIX getline(); public headers and the shared library
 * only.
 *
 * Build against an installed librelay (README.md, "Install"):
 *
 *	cc -o example partition_producer.c $(pkg-config --cflags --libs librelay)
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <relay/relay.h>

int main(int argc, char **argv)
{
	relay_error err;
	char **streams = NULL;
	char *line = NULL;
	size_t n = 0, cap = 0;
	ssize_t len;

	if (argc != 2) {
		fprintf(stderr, "usage: partition_producer REDIS_STREAM\n");
		return 2;
	}
	memset(&err, 0, sizeof(err));
	if (relay_stream_list_parse(argv[1], &streams, &n, &err)) {
		fprintf(stderr, "REDIS_STREAM: invalid value \"%s\": %s\n",
			argv[1], err.text);
		return 1;
	}
	while ((len = getline(&line, &cap, stdin)) > 0) {
		const char *s;

		if (line[len - 1] == '\n')
			line[--len] = '\0';
		if (len == 0)
			continue;
		s = streams[relay_stream_partition(line, (size_t)len, n)];
		printf("%s %s\n", line, s);
		printf("  redis-cli XADD '%s' '*' event '{\"order\":\"%s\"}'\n",
		       s, line);
	}
	free(line);
	relay_stream_list_free(streams);
	return 0;
}
