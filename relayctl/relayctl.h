/*
 * relayctl.h - shared declarations of the relayctl commands.
 *
 * Each command group lives in its own cmd_*.c and exposes one entry point
 * taking the arguments after its name (argv[0] is the command name).
 * Exit codes: 0 success, 1 runtime/validation failure, 2 usage.
 */
#ifndef RELAYCTL_H
#define RELAYCTL_H

#include <stdio.h>

enum { RELAYCTL_OK = 0, RELAYCTL_FAIL = 1, RELAYCTL_USAGE = 2 };

int relayctl_cmd_validate(int argc, char **argv);
int relayctl_cmd_match(int argc, char **argv);
int relayctl_cmd_app(int argc, char **argv);
int relayctl_cmd_dlq(int argc, char **argv);
int relayctl_cmd_health(int argc, char **argv);
int relayctl_cmd_stats(int argc, char **argv);
int relayctl_cmd_state(int argc, char **argv);  /* cmd_state.c */
int relayctl_cmd_publish(int argc, char **argv);  /* cmd_publish.c */
int relayctl_cmd_event(int argc, char **argv);  /* cmd_event.c */
int relayctl_cmd_tail(int argc, char **argv);   /* cmd_tail.c */

/* Subcommands, called by their group's dispatcher (argv[0] = the
 * subcommand name). */
int relayctl_cmd_app_run(int argc, char **argv);      /* cmd_app_run.c */
int relayctl_cmd_app_ls(int argc, char **argv);       /* cmd_app_ls.c */
int relayctl_cmd_app_inspect(int argc, char **argv);  /* cmd_app_inspect.c */
int relayctl_cmd_app_invoke(int argc, char **argv);   /* cmd_app_invoke.c */
int relayctl_cmd_dlq_inspect(int argc, char **argv);  /* cmd_dlq_inspect.c */
int relayctl_cmd_dlq_replay(int argc, char **argv);   /* cmd_dlq_replay.c */
int relayctl_cmd_dlq_rm(int argc, char **argv);       /* cmd_dlq_rm.c */
int relayctl_cmd_dlq_summary(int argc, char **argv);  /* cmd_dlq_summary.c */

/* Print "relayctl: <msg>" to stderr; returns @code. */
int relayctl_error(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* True when @arg is "-h" or "--help". */
int relayctl_is_help(const char *arg);

#endif /* RELAYCTL_H */
