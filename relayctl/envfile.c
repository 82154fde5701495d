/*
 * envfile.c - read relayctl's defaults file (systemd EnvironmentFile
 * syntax) into the environment.
 *
 * The syntax is the subset of systemd's that a hand-written
 * /etc/default/relay uses: one KEY=VALUE per line, blank lines and lines
 * starting with '#' or ';' ignored, the value bare (surrounding blanks
 * trimmed), "double-quoted" (\" \\ \$ \` are escapes) or 'single-quoted'
 * (literal). Where systemd would silently skip a line (no '=', a bad
 * name, an unterminated quote, a continuation), relayctl stops with the
 * file and line: an operator should not find out from relayd that a
 * setting never applied.
 *
 * The file is the operator's (or root's) and holds REDIS_URI with its
 * password: no message quotes a line or a value.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envfile.h"
#include "relayctl.h"

/* Big enough for any real defaults file; a bigger one is a mistake. */
#define ENVFILE_MAX_BYTES (1 << 20)

struct assign {
	char *key, *value;   /* point into the line copies in lines[] */
	int keep;            /* the environment already sets it */
};

struct envfile {
	char **lines;
	struct assign *a;
	size_t nlines, na, cap;
};

/* What the last load set: the file's path and the names it set. Kept
 * until exit (relayctl_envfile_origin()). */
static char *origin_path;
static char **origin_keys;
static size_t origin_n;

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static int valid_key(const char *k)
{
	if (!isalpha((unsigned char)*k) && *k != '_')
		return 0;
	for (k++; *k; k++)
		if (!isalnum((unsigned char)*k) && *k != '_')
			return 0;
	return 1;
}

/*
 * Decode the quoted value starting at @p (on its quote) in place into @p.
 * Returns the end of the quoted text (after the closing quote), or NULL
 * when it is not terminated on this line.
 */
static char *unquote(char *p)
{
	char q = *p, *in = p + 1, *out = p;

	for (; *in && *in != q; in++) {
		if (q == '"' && *in == '\\' && in[1] &&
		    strchr("\"\\$`", in[1]))
			in++;
		*out++ = *in;
	}
	if (*in != q)
		return NULL;
	*out = '\0';
	return in + 1;
}

/*
 * One line, NUL-terminated without its newline. Returns 0 (nothing to
 * set), 1 (*key and *value set, pointing into @line) or -1 (*why set).
 */
static int parse_line(char *line, char **key, char **value, const char **why)
{
	char *p = line, *eq, *end;

	end = p + strlen(p);
	if (end > p && end[-1] == '\r')
		*--end = '\0';
	while (is_blank(*p))
		p++;
	while (end > p && is_blank(end[-1]))
		*--end = '\0';
	if (!*p || *p == '#' || *p == ';')
		return 0;
	eq = strchr(p, '=');
	if (!eq) {
		*why = "expected KEY=VALUE";
		return -1;
	}
	*key = p;
	for (end = eq; end > p && is_blank(end[-1]); end--)
		;
	*end = '\0';
	if (!valid_key(p)) {
		*why = "the name before '=' is not a variable name (letters, "
		       "digits, '_')";
		return -1;
	}
	p = eq + 1;
	while (is_blank(*p))
		p++;
	*value = p;
	if (*p == '"' || *p == '\'') {
		end = unquote(p);
		if (!end) {
			*why = "unterminated quote (a value spans one line)";
			return -1;
		}
		while (is_blank(*end))
			end++;
		if (*end) {
			*why = "text after the closing quote";
			return -1;
		}
		return 1;
	}
	if (*p && p[strlen(p) - 1] == '\\') {
		*why = "a line continuation ('\\' at the end) is not "
		       "supported";
		return -1;
	}
	return 1;
}

/* The variables relayctl (and relayd) are configured by. */
static int ours(const char *key)
{
	return strncmp(key, "REDIS_", 6) == 0 || strncmp(key, "RELAY_", 6) == 0;
}

static void envfile_free(struct envfile *f)
{
	size_t i;

	for (i = 0; i < f->nlines; i++)
		free(f->lines[i]);
	free(f->lines);
	free(f->a);
}

static int add(struct envfile *f, char *line, char *key, char *value)
{
	if (f->nlines == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 16;
		char **l = realloc(f->lines, cap * sizeof(*l));
		struct assign *a;

		if (!l)
			return -1;
		f->lines = l;
		a = realloc(f->a, cap * sizeof(*a));
		if (!a)
			return -1;
		f->a = a;
		f->cap = cap;
	}
	f->lines[f->nlines++] = line;
	if (key) {
		const char *now = getenv(key);

		f->a[f->na].key = key;
		f->a[f->na].value = value;
		f->a[f->na].keep = now && *now;
		f->na++;
	}
	return 0;
}

static int read_file(struct envfile *f, FILE *in, const char *path)
{
	char *buf = NULL;
	size_t cap = 0, total = 0;
	unsigned long lineno = 0;
	ssize_t n;
	int rc = RELAYCTL_OK;

	while ((n = getline(&buf, &cap, in)) >= 0) {
		char *key = NULL, *value = NULL, *copy;
		const char *why = NULL;
		int m;

		lineno++;
		total += (size_t)n;
		if (total > ENVFILE_MAX_BYTES) {
			rc = relayctl_error(RELAYCTL_FAIL, "%s: larger than "
					    "%d bytes", path,
					    ENVFILE_MAX_BYTES);
			break;
		}
		if (n > 0 && buf[n - 1] == '\n')
			buf[--n] = '\0';
		if (strlen(buf) != (size_t)n) {
			rc = relayctl_error(RELAYCTL_FAIL, "%s:%lu: NUL byte "
					    "in the line", path, lineno);
			break;
		}
		m = parse_line(buf, &key, &value, &why);
		if (m < 0) {
			rc = relayctl_error(RELAYCTL_FAIL, "%s:%lu: %s", path,
					    lineno, why);
			break;
		}
		if (m == 0 || !ours(key))
			continue;
		/* The line is parsed in place: keep it, re-point into it. */
		copy = malloc((size_t)n + 1);
		if (copy)
			memcpy(copy, buf, (size_t)n + 1);
		if (!copy || add(f, copy, copy + (key - buf),
				 copy + (value - buf))) {
			free(copy);
			rc = relayctl_error(RELAYCTL_FAIL, "%s: out of memory",
					    path);
			break;
		}
	}
	if (rc == RELAYCTL_OK && ferror(in))
		rc = relayctl_error(RELAYCTL_FAIL, "%s: %s", path,
				    strerror(errno));
	free(buf);
	return rc;
}

/* Note that the file @path set @key. Diagnostic only: on allocation
 * failure the key reads as the environment's. */
static void remember(const char *path, const char *key)
{
	char **k;

	if (!origin_path)
		origin_path = strdup(path);
	if (!origin_path)
		return;
	k = realloc(origin_keys, (origin_n + 1) * sizeof(*k));
	if (!k)
		return;
	origin_keys = k;
	origin_keys[origin_n] = strdup(key);
	if (origin_keys[origin_n])
		origin_n++;
}

const char *relayctl_envfile_origin(const char *key)
{
	size_t i;

	for (i = 0; i < origin_n; i++)
		if (strcmp(origin_keys[i], key) == 0)
			return origin_path;
	return NULL;
}

int relayctl_envfile_load(const char *path, int optional)
{
	struct envfile f = { 0 };
	FILE *in;
	size_t i;
	int rc;

	in = fopen(path, "re");
	if (!in) {
		/* The default file is root's and may be 0600: an operator
		 * without access still gets the environment and flags. */
		if (optional && (errno == ENOENT || errno == EACCES ||
				 errno == ENOTDIR))
			return RELAYCTL_OK;
		return relayctl_error(RELAYCTL_FAIL, "%s: %s", path,
				      strerror(errno));
	}
	rc = read_file(&f, in, path);
	fclose(in);
	for (i = 0; rc == RELAYCTL_OK && i < f.na; i++) {
		if (f.a[i].keep)
			continue;
		if (setenv(f.a[i].key, f.a[i].value, 1))
			rc = relayctl_error(RELAYCTL_FAIL, "%s: %s", path,
					    strerror(errno));
		else
			remember(path, f.a[i].key);
	}
	envfile_free(&f);
	return rc;
}
