/*
 * cmdutil.h - helpers shared by relayctl commands: subcommand dispatch,
 * the usual command-line problems, loading app templates (validate,
 * match, app …), reading input, printing JSON and listings.
 */
#ifndef RELAYCTL_CMDUTIL_H
#define RELAYCTL_CMDUTIL_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "fmt.h"
#include "relay/app.h"

/* One subcommand of a group, for relayctl_dispatch(). */
struct relayctl_sub {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;  /* for the group's usage, or NULL */
};

/*
 * Run the entry of @subs (@n of them) named argv[1] with (argc - 1,
 * argv + 1) and return its exit code. No argv[1]: @usage on stderr, exit
 * 2. -h or --help: @usage on stdout, exit 0. An unknown name, three lines
 * on stderr, exit 2 (doc/cli.md L-1):
 *   relayctl: GROUP: unknown subcommand "X"; did you mean "Y"?
 *   usage: relayctl GROUP {a|b|c} [ARGS]
 *   try 'relayctl GROUP --help'
 * (`unknown command "X"` and `relayctl [--env-file FILE] {…}` when @group
 * is NULL; the suggestion only when relayctl_suggest() has one).
 */
int relayctl_dispatch(const struct relayctl_sub *subs, size_t n,
		      const char *group, int argc, char **argv,
		      void (*usage)(FILE *f));

/*
 * The one of @names (@n of them) that @word most likely misspells: within
 * one edit (two for a word of 6 or more characters; a swap of two
 * neighbours is one), else the only name @word (2 characters or more)
 * begins. Returns a borrowed name, or NULL.
 */
const char *relayctl_suggest(const char *word, const char *const *names,
			     size_t n);

/* Print `CMD: unexpected argument "ARG"`. Returns RELAYCTL_USAGE. */
int relayctl_unexpected(const char *cmd, const char *arg);

/*
 * When @arg is an option ("-x...", not "-" alone), print `CMD: unknown
 * option "ARG"` and return RELAYCTL_USAGE; otherwise return 0.
 */
int relayctl_unknown_option(const char *cmd, const char *arg);

/*
 * Take @arg as the command's one positional argument into *@slot. An
 * option is relayctl_unknown_option(); a second one (or any, when @slot
 * is NULL) is relayctl_unexpected(). Returns 0, or RELAYCTL_USAGE after
 * printing the problem.
 */
int relayctl_positional(const char *cmd, const char *arg, const char **slot);

/*
 * Print @j on stdout with jansson's @flags, then a newline. Returns 0, or
 * -1 when @j is NULL or could not be encoded (nothing more printed).
 */
int relayctl_put_json(const json_t *j, size_t flags);

/*
 * Print a listing on stdout: @list (indented JSON) when not NULL, else
 * table @t; then flush. Returns RELAYCTL_OK or RELAYCTL_FAIL (stdout).
 */
int relayctl_put_listing(const json_t *list, const relayctl_table *t);

/*
 * Load the apps under @dir, printing every template problem to stderr as
 * "app: file:line:col: message" (doc/cli.md L-2) and a missing or unreadable
 * @dir as "relayctl: CMD: cannot open apps directory …". Returns
 * RELAYCTL_OK with *out set (the set may hold invalid apps: check
 * relay_appset_invalid_count()), or RELAYCTL_FAIL with *out NULL.
 */
int relayctl_load_apps(relay_appset **out, const char *cmd, const char *dir);
/* The same, also counting the directories skipped because their name is
 * not a valid app name (each mentioned, escaped, on stderr). */
int relayctl_load_apps_counted(relay_appset **out, const char *cmd,
			       const char *dir, int *skipped);

/* Template problems kept per app by relayctl_load_apps_kept(). */
struct relayctl_diags {
	struct {
		char *app;   /* the app's name */
		char *line;  /* its problem line (cleaned), NULL once shown */
	} *v;
	size_t n;
};

/*
 * relayctl_load_apps_counted() that keeps the apps' problem lines in
 * @keep (zeroed by the caller) instead of printing them, so that the
 * caller can print each app's own lines next to the app's other
 * problems. The directory's own problems are printed at once. On
 * failure @keep is printed and emptied.
 */
int relayctl_load_apps_kept(relay_appset **out, const char *cmd,
			    const char *dir, int *skipped,
			    struct relayctl_diags *keep);
/* Print (stderr) and drop the kept lines of @app, or of every app when
 * @app is NULL. */
void relayctl_diags_print(struct relayctl_diags *d, const char *app);
/* Print what is left, then free. */
void relayctl_diags_free(struct relayctl_diags *d);

/*
 * Match an option of the form "--name VALUE" or "--name=VALUE" at argv[*i]
 * (advancing *i past VALUE). Returns 1 and sets *value on a match, 0 when
 * argv[*i] is not this option, -1 (after printing a usage error) when the
 * value is missing.
 */
int relayctl_opt_value(int argc, char **argv, int *i, const char *name,
		       const char *cmd, const char **value);

/*
 * Read all of @path ("-" = stdin) into a new buffer (free with free()).
 * Prints "relayctl: CMD: PATH: reason" and returns RELAYCTL_FAIL on error.
 */
int relayctl_read_all(const char *cmd, const char *path, char **data,
		      size_t *len);

#endif /* RELAYCTL_CMDUTIL_H */
