/*
 * cmdutil.c - helpers shared by the relayctl commands.
 */
#define _GNU_SOURCE  /* asprintf */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdutil.h"
#include "fmt.h"
#include "relayctl.h"

/*
 * The edit distance between @a and @b (insertions, deletions,
 * substitutions and swaps of two neighbours, each 1), or 99 when either
 * is longer than a command name can be.
 */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	size_t d[33][33];

	if (la > 32 || lb > 32)
		return 99;
	for (i = 0; i <= la; i++)
		d[i][0] = i;
	for (j = 0; j <= lb; j++)
		d[0][j] = j;
	for (i = 1; i <= la; i++) {
		for (j = 1; j <= lb; j++) {
			size_t c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);

			if (d[i - 1][j] + 1 < c)
				c = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < c)
				c = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < c)
				c = d[i - 2][j - 2] + 1;
			d[i][j] = c;
		}
	}
	return d[la][lb];
}

const char *relayctl_suggest(const char *word, const char *const *names,
			     size_t n)
{
	size_t i, best = 99, len = strlen(word), d;
	size_t limit = len >= 6 ? 2 : 1;
	const char *pick = NULL, *prefix = NULL;
	int prefixes = 0;

	for (i = 0; i < n; i++) {
		d = edit_distance(word, names[i]);
		if (d < best) {
			best = d;
			pick = names[i];
		}
		if (len >= 2 && strncmp(names[i], word, len) == 0) {
			prefix = names[i];
			prefixes++;
		}
	}
	if (best <= limit && best < len)
		return pick;
	return prefixes == 1 ? prefix : NULL;
}

int relayctl_dispatch(const struct relayctl_sub *subs, size_t n,
		      const char *group, int argc, char **argv,
		      void (*usage)(FILE *f))
{
	const char *names[32], *hint;
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return RELAYCTL_USAGE;
	}
	if (relayctl_is_help(argv[1])) {
		usage(stdout);
		return RELAYCTL_OK;
	}
	for (i = 0; i < n; i++)
		if (strcmp(argv[1], subs[i].name) == 0)
			return subs[i].fn(argc - 1, argv + 1);
	for (i = 0; i < n && i < 32; i++)
		names[i] = subs[i].name;
	hint = relayctl_suggest(argv[1], names, i);
	/* One line of what is wrong (and what was meant), one of usage, one
	 * of where to read more: not the whole help. */
	relayctl_error(RELAYCTL_USAGE, "%s%sunknown %scommand \"%s\"%s%s%s",
		       group ? group : "", group ? ": " : "",
		       group ? "sub" : "", argv[1], hint ? "; did you mean \""
		       : "", hint ? hint : "", hint ? "\"?" : "");
	fprintf(stderr, "usage: relayctl %s%s{", group ? group : "[--env-file "
		"FILE]", " ");
	for (i = 0; i < n; i++)
		fprintf(stderr, "%s%s", i ? "|" : "", subs[i].name);
	fprintf(stderr, "} [ARGS]\ntry 'relayctl %s%s--help'\n",
		group ? group : "", group ? " " : "");
	return RELAYCTL_USAGE;
}

int relayctl_unexpected(const char *cmd, const char *arg)
{
	return relayctl_error(RELAYCTL_USAGE, "%s: unexpected argument "
			      "\"%s\"", cmd, arg);
}

int relayctl_unknown_option(const char *cmd, const char *arg)
{
	if (arg[0] != '-' || arg[1] == '\0')
		return 0;
	return relayctl_error(RELAYCTL_USAGE, "%s: unknown option \"%s\"",
			      cmd, arg);
}

int relayctl_positional(const char *cmd, const char *arg, const char **slot)
{
	if (relayctl_unknown_option(cmd, arg))
		return RELAYCTL_USAGE;
	if (!slot || *slot)
		return relayctl_unexpected(cmd, arg);
	*slot = arg;
	return 0;
}

int relayctl_put_json(const json_t *j, size_t flags)
{
	if (!j || json_dumpf(j, stdout, flags) != 0)
		return -1;
	fputc('\n', stdout);
	return 0;
}

int relayctl_put_listing(const json_t *list, const relayctl_table *t)
{
	if (list)
		relayctl_put_json(list, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	else
		relayctl_table_print(t, stdout);
	return fflush(stdout) ? RELAYCTL_FAIL : RELAYCTL_OK;
}

/* Print @s with control characters replaced, so each problem stays one
 * line whatever a template's keys contain. */
static void put_clean(const char *s, FILE *f)
{
	fputs(relayctl_c(s), f);
}

struct diag_ctx {
	const char *cmd;
	int dir_failed;
	int skipped;     /* directories skipped for their name */
	struct relayctl_diags *keep;  /* app problems kept, not printed */
};

/* Keep one problem line of @app for relayctl_diags_print(). */
static void keep_diag(struct relayctl_diags *d, const char *app,
		      const relay_error *err)
{
	char *line = NULL, *name = strdup(app);
	void *p;

	if (name && asprintf(&line, "%s: %s:%d:%d: %s", relayctl_c(app),
			     relayctl_c(err->path), err->line > 0 ?
			     err->line : 1, err->column > 0 ? err->column : 1,
			     relayctl_c(err->text)) < 0)
		line = NULL;
	p = line ? realloc(d->v, (d->n + 1) * sizeof(*d->v)) : NULL;
	if (!p) {
		/* Out of memory: say it at once rather than lose it. */
		fprintf(stderr, "%s: %s\n", relayctl_c(app),
			relayctl_c(err->text));
		free(name);
		free(line);
		return;
	}
	d->v = p;
	d->v[d->n].app = name;
	d->v[d->n].line = line;
	d->n++;
}

static void print_diag(const char *app, const relay_error *err,
		       void *payload)
{
	struct diag_ctx *ctx = payload;

	if (!app) {
		/* The apps directory itself, or a directory in it skipped
		 * for its name (RELAY_EINVAL; the name comes escaped). */
		fprintf(stderr, "relayctl: %s: ", ctx->cmd);
		put_clean(err->path, stderr);
		fputs(": ", stderr);
		put_clean(err->text, stderr);
		fputc('\n', stderr);
		if (err->code == RELAY_EINVAL)
			ctx->skipped++;
		else
			ctx->dir_failed = 1;
		return;
	}
	if (ctx->keep) {
		keep_diag(ctx->keep, app, err);
		return;
	}
	put_clean(app, stderr);
	fputs(": ", stderr);
	put_clean(err->path, stderr);
	fprintf(stderr, ":%d:%d: ", err->line > 0 ? err->line : 1,
		err->column > 0 ? err->column : 1);
	put_clean(err->text, stderr);
	fputc('\n', stderr);
}

int relayctl_load_apps(relay_appset **out, const char *cmd, const char *dir)
{
	return relayctl_load_apps_counted(out, cmd, dir, NULL);
}

void relayctl_diags_print(struct relayctl_diags *d, const char *app)
{
	size_t i;

	for (i = 0; i < d->n; i++) {
		if (!d->v[i].line || (app && strcmp(d->v[i].app, app)))
			continue;
		fprintf(stderr, "%s\n", d->v[i].line);
		free(d->v[i].line);
		d->v[i].line = NULL;
	}
}

void relayctl_diags_free(struct relayctl_diags *d)
{
	size_t i;

	relayctl_diags_print(d, NULL);
	for (i = 0; i < d->n; i++)
		free(d->v[i].app);
	free(d->v);
	d->v = NULL;
	d->n = 0;
}

int relayctl_load_apps_kept(relay_appset **out, const char *cmd,
			    const char *dir, int *skipped,
			    struct relayctl_diags *keep)
{
	struct diag_ctx ctx = { cmd, 0, 0, keep };
	int rc;

	rc = relay_appset_load(out, dir, print_diag, &ctx);
	if (skipped)
		*skipped = ctx.skipped;
	if (rc == 0)
		return RELAYCTL_OK;
	relayctl_diags_free(keep);
	if (!ctx.dir_failed)
		relayctl_error(RELAYCTL_FAIL, "%s: %s: %s", cmd, dir,
			       relay_strerror(rc));
	return RELAYCTL_FAIL;
}

int relayctl_load_apps_counted(relay_appset **out, const char *cmd,
			       const char *dir, int *skipped)
{
	struct diag_ctx ctx = { cmd, 0, 0, NULL };
	int rc;

	rc = relay_appset_load(out, dir, print_diag, &ctx);
	if (skipped)
		*skipped = ctx.skipped;
	if (rc == 0)
		return RELAYCTL_OK;
	if (!ctx.dir_failed)
		relayctl_error(RELAYCTL_FAIL, "%s: %s: %s", cmd, dir,
			       relay_strerror(rc));
	return RELAYCTL_FAIL;
}

int relayctl_opt_value(int argc, char **argv, int *i, const char *name,
		       const char *cmd, const char **value)
{
	const char *a = argv[*i];
	size_t n = strlen(name);

	if (strncmp(a, name, n) != 0)
		return 0;
	if (a[n] == '=') {
		*value = a + n + 1;
		return 1;
	}
	if (a[n] != '\0')
		return 0;
	if (*i + 1 >= argc) {
		relayctl_error(RELAYCTL_USAGE, "%s: option %s needs a value",
			       cmd, name);
		return -1;
	}
	*value = argv[++*i];
	return 1;
}

int relayctl_read_all(const char *cmd, const char *path, char **data,
		      size_t *len)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0, r;

	if (!f)
		return relayctl_error(RELAYCTL_FAIL, "%s: %s: %s", cmd, path,
				      strerror(errno));
	do {
		if (cap - n < 4096) {
			char *nb;

			cap = cap ? cap * 2 : 8192;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				if (f != stdin)
					fclose(f);
				return relayctl_error(RELAYCTL_FAIL,
						      "%s: out of memory", cmd);
			}
			buf = nb;
		}
		r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
	} while (r > 0);
	if (ferror(f)) {
		int e = errno;

		free(buf);
		if (f != stdin)
			fclose(f);
		return relayctl_error(RELAYCTL_FAIL, "%s: %s: %s", cmd,
				      strcmp(path, "-") ? path : "stdin",
				      strerror(e));
	}
	if (f != stdin)
		fclose(f);
	buf[n] = '\0';
	*data = buf;
	*len = n;
	return RELAYCTL_OK;
}
