/*
 * handlercheck.c - can an app's handlers be loaded? (relayctl validate)
 *
 * What relayd would only find out at the first event - a missing module,
 * a syntax error, a function that is not there, a command that does not
 * exist - is reported here with the file and line to fix. No handler
 * code runs: python3 compiles the module source (compile(), which never
 * executes it) and reads its top-level names from the syntax tree; node
 * runs `node --check` (parse only). Files are found by relayctl itself,
 * as the bootstraps would find them (relay-bootstrap.py, .js); only
 * regular files reach a compiler (a FIFO would block it).
 *
 * The compilers get the module files of apps written by someone else, so
 * they run like a handler would: a clean environment, the sandbox user
 * when relayctl runs as root, a new network namespace when the kernel
 * grants one, a CPU limit. Whatever they print is echoed cleaned, one
 * problem per line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fmt.h"
#include "handlercheck.h"
#include "relayctl.h"

/* A handler's PATH in the sandbox when the app sets none
 * (doc/configuration.md C-7). */
#define SANDBOX_PATH "/usr/local/bin:/usr/bin:/bin"
/* What a compiler may print before relayctl stops reading. */
#define MAX_OUTPUT (256 * 1024)
#define CHECK_CPU_SECONDS 30

/*
 * The python3 side. argv: the size cap (bytes), then triples KIND
 * HANDLER PATH. KIND F: compile
 * PATH (relative to the app directory) once and say whether the
 * handler's function is bound at its top level; Q: whether PATH names a
 * module outside the app directory (the standard library, site
 * packages). One line per problem, fields tab-separated:
 *   S path line col message   the file does not compile
 *   E path message            it cannot be read
 *   F handler                 no top-level binding of the function
 *   M handler                 no such module anywhere
 * A module that binds names dynamically (star import, globals(),
 * setattr, a module __getattr__, ...) is given the benefit of the doubt.
 */
static const char py_check[] =
"import ast, os, sys\n"
"from importlib.machinery import EXTENSION_SUFFIXES, PathFinder\n"
"DYN = {'globals', 'setattr', 'exec', 'eval', 'vars', 'locals',\n"
"       '__import__', '__getattr__', '__dict__', 'modules'}\n"
"FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)\n"
"def say(*f):\n"
"    print('\\t'.join(' '.join(str(x).split()) for x in f))\n"
"def names(tree):\n"
"    out, dyn = set(), False\n"
"    def bind(t):\n"
"        if isinstance(t, ast.Name):\n"
"            out.add(t.id)\n"
"        elif isinstance(t, (ast.Tuple, ast.List)):\n"
"            for e in t.elts:\n"
"                bind(e)\n"
"        elif isinstance(t, ast.Starred):\n"
"            bind(t.value)\n"
"    def walk(body):\n"
"        nonlocal dyn\n"
"        for n in body:\n"
"            if isinstance(n, FUNCS):\n"
"                out.add(n.name)\n"
"                continue\n"
"            if isinstance(n, ast.Assign):\n"
"                for t in n.targets:\n"
"                    bind(t)\n"
"            elif isinstance(n, (ast.AnnAssign, ast.AugAssign)):\n"
"                bind(n.target)\n"
"            elif isinstance(n, (ast.Import, ast.ImportFrom)):\n"
"                for a in n.names:\n"
"                    dyn = dyn or a.name == '*'\n"
"                    out.add(a.asname or a.name.split('.')[0])\n"
"            elif isinstance(n, (ast.For, ast.AsyncFor)):\n"
"                bind(n.target)\n"
"            elif isinstance(n, (ast.With, ast.AsyncWith)):\n"
"                for i in n.items:\n"
"                    if i.optional_vars is not None:\n"
"                        bind(i.optional_vars)\n"
"            elif isinstance(n, ast.ExceptHandler) and n.name:\n"
"                out.add(n.name)\n"
"            for f in ('body', 'orelse', 'finalbody', 'handlers', 'cases'):\n"
"                sub = getattr(n, f, None)\n"
"                if isinstance(sub, list):\n"
"                    walk(sub)\n"
"    walk(tree.body)\n"
"    for n in ast.walk(tree):\n"
"        if isinstance(n, ast.Name) and n.id in DYN or \\\n"
"                isinstance(n, ast.Attribute) and n.attr in DYN or \\\n"
"                isinstance(n, FUNCS) and n.name in DYN:\n"
"            dyn = True\n"
"        elif isinstance(n, ast.Global):\n"
"            out.update(n.names)\n"
"        elif isinstance(n, ast.NamedExpr):\n"
"            bind(n.target)\n"
"    return out, dyn\n"
"seen = {}\n"
"cap = int(sys.argv[1])\n"
"a = sys.argv[2:]\n"
"for i in range(0, len(a) - 2, 3):\n"
"    kind, handler, path = a[i:i + 3]\n"
"    func = handler.rpartition('.')[2]\n"
"    if kind == 'Q':\n"
"        if path not in sys.builtin_module_names and PathFinder.find_spec(\n"
"                path, [d for d in sys.path if d]) is None:\n"
"            say('M', handler)\n"
"        continue\n"
"    if path not in seen:\n"
"        seen[path] = None\n"
"        try:\n"
"            with open(path, 'rb') as f:\n"
"                src = f.read(cap + 1)\n"
"            if len(src) > cap:\n"
"                say('E', path, 'larger than %d bytes (--max-file-size)'\n"
"                    % cap)\n"
"                continue\n"
"            compile(src, path, 'exec', dont_inherit=True)\n"
"            seen[path] = names(ast.parse(src, path))\n"
"        except SyntaxError as e:\n"
"            say('S', path, e.lineno or 1, e.offset or 1,\n"
"                '%s: %s' % (type(e).__name__, e.msg))\n"
"        except Exception as e:\n"
"            say('E', path, '%s: %s' % (type(e).__name__, e))\n"
"    r = seen[path]\n"
"    if r is None or r[1] or func in r[0]:\n"
"        continue\n"
"    d = os.path.dirname(path)\n"
"    if os.path.basename(path) == '__init__.py' and (\n"
"            os.path.isdir(os.path.join(d, func)) or any(\n"
"                os.path.exists(os.path.join(d, func + s))\n"
"                for s in ['.py'] + EXTENSION_SUFFIXES)):\n"
"        continue\n"
"    say('F', handler)\n";

struct handler {
	const char *name;   /* module.function (borrowed from the app) */
	int line;           /* of its rule or schedule in the template */
	char *file;         /* python3/node: module file found, or NULL */
	char *top;          /* python3: a module to look for elsewhere */
	int big;            /* file is over the size cap: not compiled */
};

struct hc {
	const relay_app *app;
	const char *dir;         /* absolute app directory */
	char *shown;             /* the app directory as given */
	struct handler *h;
	size_t n;
	int problems;
	int drop;                /* run compilers as uid/gid below */
	uid_t uid;
	gid_t gid;
	unsigned long long max_bytes;  /* largest file given a compiler */
	const char *const *check_argv; /* the kind's checker (its driver's) */
	size_t check_argc;             /* its length */
};

/* "app: FILE:LINE:COL: message"; FILE under the app directory, or the
 * template when @file is NULL. */
static void problem(struct hc *c, const char *file, int line, int col,
		    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void problem(struct hc *c, const char *file, int line, int col,
		    const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: ", relayctl_c(relay_app_name(c->app)));
	if (file)
		fprintf(stderr, "%s/%s", relayctl_c(c->shown),
			relayctl_c(file));
	else
		fputs(relayctl_c(relay_app_template_path(c->app)), stderr);
	fprintf(stderr, ":%d:%d: %s\n", line > 0 ? line : 1,
		col > 0 ? col : 1, relayctl_c(msg));
	c->problems++;
}

static int add_handler(struct hc *c, const char *name, int line)
{
	size_t i;
	struct handler *h;

	for (i = 0; i < c->n; i++)
		if (strcmp(c->h[i].name, name) == 0)
			return 0;
	h = realloc(c->h, (c->n + 1) * sizeof(*h));
	if (!h)
		return -1;
	c->h = h;
	h[c->n].name = name;
	h[c->n].line = line;
	h[c->n].file = NULL;
	h[c->n].top = NULL;
	h[c->n].big = 0;
	c->n++;
	return 0;
}

static struct handler *find_handler(struct hc *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (strcmp(c->h[i].name, name) == 0)
			return &c->h[i];
	return NULL;
}

/* stat() of DIR/@rel: 1 a regular file, 0 absent, -1 something else
 * (*@st filled when it exists). */
static int file_at(const struct hc *c, const char *rel, struct stat *st)
{
	char path[4096];
	int n = snprintf(path, sizeof(path), "%s/%s", c->dir, rel);

	if (n < 0 || (size_t)n >= sizeof(path))
		return -1;    /* no such path can exist */
	if (stat(path, st) != 0)
		return 0;
	return S_ISREG(st->st_mode) ? 1 : -1;
}

/*
 * A module file bigger than the cap is never handed to a compiler: python3
 * reads a module whole (a 512 MiB sparse h.py made it a 512 MiB process)
 * and node does alike. Returns 1 when @h's file (@st) is too big, said
 * once per file.
 */
static int too_big(struct hc *c, struct handler *h, const struct stat *st)
{
	size_t i;

	if ((unsigned long long)st->st_size <= c->max_bytes)
		return 0;
	h->big = 1;
	for (i = 0; c->h + i < h; i++)
		if (c->h[i].big && c->h[i].file &&
		    strcmp(c->h[i].file, h->file) == 0)
			return 1;
	problem(c, h->file, 1, 1, "file of %lld bytes is larger than the %llu "
		"bytes validate compiles (--max-file-size)",
		(long long)st->st_size, c->max_bytes);
	return 1;
}

/* "a.b.fn" -> "a/b" (new string), the module as a relative path. */
static char *module_path(const char *handler)
{
	const char *dot = strrchr(handler, '.');
	char *p, *q;

	if (!dot)
		return NULL;
	p = strndup(handler, (size_t)(dot - handler));
	for (q = p; p && *q; q++)
		if (*q == '.')
			*q = '/';
	return p;
}

/* ---- running a compiler ------------------------------------------ */

/*
 * The interpreter @prog a handler would get: the first on the sandbox's
 * PATH (what bwrap offers it), else on relayctl's own. Returns @buf, or
 * NULL when there is none.
 */
static const char *find_prog(const char *prog, char *buf, size_t size)
{
	const char *paths[2] = { SANDBOX_PATH, getenv("PATH") };
	struct stat st;
	int k;

	for (k = 0; k < 2; k++) {
		const char *d = paths[k];

		while (d && *d) {
			size_t n = strcspn(d, ":");

			snprintf(buf, size, "%.*s/%s", (int)n, d, prog);
			if (n && buf[0] == '/' && stat(buf, &st) == 0 &&
			    S_ISREG(st.st_mode) && (st.st_mode & S_IXOTH))
				return buf;
			d += n + (d[n] == ':');
		}
	}
	return NULL;
}

/* In the child: as little as a handler has. Only async-signal-safe
 * calls from here on. */
static void child_setup(const struct hc *c, int out)
{
	struct rlimit cpu = { CHECK_CPU_SECONDS, CHECK_CPU_SECONDS };
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 ||
	    dup2(out, 2) < 0 || chdir(c->dir) != 0)
		_exit(126);
	setrlimit(RLIMIT_CPU, &cpu);
	/* No network for what only reads files; not every kernel lets an
	 * unprivileged process have its own namespace: best effort. */
	if (geteuid() == 0)
		(void)unshare(CLONE_NEWNET);
	else
		(void)unshare(CLONE_NEWUSER | CLONE_NEWNET);
	if (c->drop && (setgroups(0, NULL) != 0 || setgid(c->gid) != 0 ||
			setuid(c->uid) != 0)) {
		static const char m[] = "cannot drop root privileges\n";

		(void)!write(1, m, sizeof(m) - 1);
		_exit(126);
	}
}

/*
 * Run @argv (argv[0] found by find_prog()) in the app directory with a
 * clean environment; collect stdout and stderr together into *@out (new,
 * NUL-terminated). Returns the wait status, or -1 when it could not run
 * (errno).
 */
static int run_capture(const struct hc *c, char *const argv[], char **out)
{
	static char *const envp[] = { "PATH=" SANDBOX_PATH, "HOME=/tmp",
				      "LANG=C.UTF-8", NULL };
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap), prog[4096];
	int fd[2], st = 0;
	pid_t pid;
	ssize_t n;

	*out = NULL;
	if (!find_prog(argv[0], prog, sizeof(prog))) {
		free(buf);
		errno = ENOENT;
		return -1;
	}
	if (!buf || pipe2(fd, O_CLOEXEC) != 0) {
		free(buf);
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		free(buf);
		return -1;
	}
	if (pid == 0) {
		child_setup(c, fd[1]);
		execve(prog, argv, envp);
		_exit(127);
	}
	close(fd[1]);
	for (;;) {
		char chunk[4096];

		n = read(fd[0], chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (len + (size_t)n + 1 > cap && len < MAX_OUTPUT) {
			char *nb = realloc(buf, 2 * cap + (size_t)n);

			if (nb) {
				buf = nb;
				cap = 2 * cap + (size_t)n;
			}
		}
		if (len + (size_t)n + 1 <= cap) {
			memcpy(buf + len, chunk, (size_t)n);
			len += (size_t)n;
		}
		/* Beyond the cap: drained, not kept. */
	}
	close(fd[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	buf[len] = '\0';
	*out = buf;
	return st;
}

/* The last non-empty line of @s, into @buf. */
static const char *last_line(const char *s, char *buf, size_t size)
{
	const char *end = s + strlen(s), *p;

	while (end > s && (end[-1] == '\n' || end[-1] == '\r'))
		end--;
	for (p = end; p > s && p[-1] != '\n'; p--)
		;
	snprintf(buf, size, "%.*s", (int)(end - p), p);
	return buf;
}

/* A checker that failed without saying why: one problem on the template
 * so that validate does not pass on a check that never ran. */
static void checker_failed(struct hc *c, const char *what, int st,
			   const char *out)
{
	char line[256];

	if (st == -1)
		problem(c, NULL, 1, 1, "cannot run %s to check the handlers: "
			"%s", what, strerror(errno));
	else
		problem(c, NULL, 1, 1, "cannot check the handlers with %s: "
			"%s", what, out && *out ? last_line(out, line,
							    sizeof(line))
						: "it failed");
}

/* Does the app's env: set @var? */
static int app_sets(const struct hc *c, const char *var)
{
	const char *name, *value;
	size_t i;

	for (i = 0; i < relay_app_env_count(c->app); i++)
		if (relay_app_env_at(c->app, i, &name, &value) == 0 &&
		    strcmp(name, var) == 0)
			return 1;
	return 0;
}

/* ---- python3 ------------------------------------------------------ */

/* Is the top-level package of @mod ("a/b") in the app directory? */
static int top_in_app(const struct hc *c, const char *mod)
{
	char top[512];
	struct stat st;

	snprintf(top, sizeof(top), "%.*s", (int)strcspn(mod, "/"), mod);
	if (file_at(c, top, &st) != 0)
		return 1;
	strncat(top, ".py", sizeof(top) - strlen(top) - 1);
	return file_at(c, top, &st) != 0;
}

/* A compiled extension or a sourceless module: nothing to check. */
static int opaque_module(const struct hc *c, const char *mod)
{
	char pat[4096];
	glob_t g;
	int found;

	snprintf(pat, sizeof(pat), "%s/%s.*", c->dir, mod);
	if (glob(pat, GLOB_NOSORT, NULL, &g) != 0)
		return 0;
	found = g.gl_pathc > 0;
	globfree(&g);
	return found;
}

static void py_missing(struct hc *c, const struct handler *h,
		       const char *mod)
{
	problem(c, NULL, h->line, 1, "handler \"%s\": module not found: no "
		"%s.py or %s/__init__.py in the app directory%s%s%s",
		h->name, mod, mod, h->top ? ", and python3 has no module \"" :
		"", h->top ? h->top : "", h->top ? "\"" : "");
}

static void py_results(struct hc *c, char *out)
{
	char *line, *save = NULL;

	for (line = strtok_r(out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *f[5] = { 0 };
		struct handler *h;
		int nf = 0;
		char *p = line;

		while (nf < 5) {
			f[nf++] = p;
			p = strchr(p, '\t');
			if (!p)
				break;
			*p++ = '\0';
		}
		if (nf == 5 && strcmp(f[0], "S") == 0) {
			problem(c, f[1], atoi(f[2]), atoi(f[3]), "%s", f[4]);
		} else if (nf == 3 && strcmp(f[0], "E") == 0) {
			problem(c, f[1], 1, 1, "%s", f[2]);
		} else if (nf == 2 && strcmp(f[0], "F") == 0 &&
			   (h = find_handler(c, f[1])) && h->file) {
			problem(c, NULL, h->line, 1, "handler \"%s\": %s "
				"defines no \"%s\" at top level", h->name,
				h->file, strrchr(h->name, '.') + 1);
		} else if (nf == 2 && strcmp(f[0], "M") == 0 &&
			   (h = find_handler(c, f[1]))) {
			char *mod = module_path(h->name);

			if (mod)
				py_missing(c, h, mod);
			free(mod);
		}
	}
}

static void check_python(struct hc *c)
{
	char **argv = calloc(c->check_argc + 4 + 3 * c->n + 1,
			     sizeof(char *)), cap[32];
	size_t i, k = 0, queries = 0;
	char *out = NULL;
	int st;

	if (!argv) {
		problem(c, NULL, 1, 1, "out of memory");
		return;
	}
	/* The interpreter and its flags come from the kind's driver
	 * (relay_runtime_kind_check_argv(): python3 -I -W ignore). */
	for (i = 0; c->check_argv[i]; i++)
		argv[k++] = (char *)c->check_argv[i];
	argv[k++] = "-c";
	argv[k++] = (char *)py_check;
	snprintf(cap, sizeof(cap), "%llu", c->max_bytes);
	argv[k++] = cap;
	for (i = 0; i < c->n; i++) {
		struct handler *h = &c->h[i];
		char *mod = module_path(h->name), rel[4096];
		struct stat sb;
		int r;

		if (!mod)
			continue;
		snprintf(rel, sizeof(rel), "%s.py", mod);
		r = file_at(c, rel, &sb);
		if (r == 0) {
			snprintf(rel, sizeof(rel), "%s/__init__.py", mod);
			r = file_at(c, rel, &sb);
		}
		if (r < 0) {
			problem(c, rel, 1, 1, "not a regular file");
		} else if (r > 0) {
			h->file = strdup(rel);
			if (h->file && !too_big(c, h, &sb)) {
				argv[k++] = "F";
				argv[k++] = (char *)h->name;
				argv[k++] = h->file;
				queries++;
			}
		} else if (opaque_module(c, mod)) {
			/* e.g. mod.cpython-311-x86_64-linux-gnu.so */
		} else if (top_in_app(c, mod)) {
			py_missing(c, h, mod);
		} else if (!app_sets(c, "PYTHONPATH")) {
			/* Maybe a module of the standard library or the
			 * system's site packages: python3 knows. */
			h->top = strndup(mod, strcspn(mod, "/"));
			if (h->top) {
				argv[k++] = "Q";
				argv[k++] = (char *)h->name;
				argv[k++] = h->top;
				queries++;
			}
		}
		free(mod);
	}
	if (queries && relay_app_runtime_available(c->app)) {
		st = run_capture(c, argv, &out);
		if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			checker_failed(c, "python3", st, out);
		else
			py_results(c, out);
	}
	free(out);
	free(argv);
}

/* ---- node --------------------------------------------------------- */

/*
 * `node --check` says where the syntax error is as
 *   /abs/path/file.js:LINE
 *   <the source line>
 *       ^^^^
 *   (blank)
 *   SyntaxError: message
 *
 * Only a location in that file counts; any other error (a file node
 * cannot open) is reported on the file's first line, with node's
 * message, never with a line of node's own code.
 */
/* Does the location "PATH:LINE" (@colon on its last ':') name @file, the
 * module checked (relative to the app directory)? A line of node's own
 * loader ("node:internal/modules/cjs/loader:1210") is no place to fix. */
static int names_file(const char *loc, const char *colon, const char *file)
{
	size_t n = (size_t)(colon - loc), f = strlen(file);

	return n >= f && memcmp(colon - f, file, f) == 0 &&
	       (n == f || colon[-(ptrdiff_t)f - 1] == '/');
}

static void node_syntax(struct hc *c, const char *file, char *out)
{
	char *lines[64], *p, *save = NULL, msg[512] = "";
	int n = 0, i, line = 1, col = 1, at = -1;

	for (p = strtok_r(out, "\n", &save); p && n < 64;
	     p = strtok_r(NULL, "\n", &save))
		lines[n++] = p;
	for (i = 0; i < n && at < 0; i++) {
		char *colon = strrchr(lines[i], ':');

		if (colon && colon[1] && strspn(colon + 1, "0123456789") ==
		    strlen(colon + 1) && names_file(lines[i], colon, file)) {
			line = atoi(colon + 1);
			at = i;
		}
	}
	if (at >= 0 && at + 2 < n) {
		const char *caret = lines[at + 2];
		size_t lead = strspn(caret, " \t");

		if (caret[lead] == '^')
			col = (int)lead + 1;
	}
	for (i = 0; i < n; i++) {
		/* "SyntaxError: ...", "TypeError: ...": the message. */
		size_t w = strspn(lines[i], "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				  "abcdefghijklmnopqrstuvwxyz");

		if (w >= 5 && !strncmp(lines[i] + w - 5, "Error", 5) &&
		    lines[i][w] == ':') {
			snprintf(msg, sizeof(msg), "%s", lines[i]);
			break;
		}
	}
	if (!*msg)
		snprintf(msg, sizeof(msg), "node --check failed%s%s",
			 n ? ": " : "", n ? lines[n - 1] : "");
	problem(c, file, line, col, "%s", msg);
}

static void check_node(struct hc *c)
{
	static const char *const ext[] = { ".js", ".cjs", ".mjs",
					   "/index.js" };
	int have_node = relay_app_runtime_available(c->app);
	size_t i, j, e;

	for (i = 0; i < c->n; i++) {
		struct handler *h = &c->h[i];
		char *mod = module_path(h->name), rel[4096];
		struct stat sb;
		int r = 0;

		if (!mod)
			continue;
		for (e = 0; e < 4 && r == 0; e++) {
			snprintf(rel, sizeof(rel), "%s%s", mod, ext[e]);
			r = file_at(c, rel, &sb);
		}
		if (r == 0)
			problem(c, NULL, h->line, 1, "handler \"%s\": module "
				"not found: no %s.js, %s.cjs, %s.mjs or "
				"%s/index.js in the app directory", h->name,
				mod, mod, mod, mod);
		else if (r < 0)
			problem(c, rel, 1, 1, "not a regular file");
		else
			h->file = strdup(rel);
		if (r > 0 && h->file)
			(void)too_big(c, h, &sb);
		free(mod);
	}
	for (i = 0; have_node && i < c->n; i++) {
		char *argv[8] = { 0 };
		char *out = NULL;
		size_t k;
		int st;

		if (!c->h[i].file || c->h[i].big)
			continue;
		/* The driver's checker (node --check), then the file. */
		for (k = 0; k < 6 && c->check_argv[k]; k++)
			argv[k] = (char *)c->check_argv[k];
		argv[k] = c->h[i].file;
		for (j = 0; j < i; j++)
			if (c->h[j].file && !strcmp(c->h[j].file,
						     c->h[i].file))
				break;
		if (j < i)
			continue;  /* checked already */
		st = run_capture(c, argv, &out);
		if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 1 && out)
			node_syntax(c, c->h[i].file, out);
		else if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			checker_failed(c, "node", st, out);
		free(out);
	}
}

/* ---- exec --------------------------------------------------------- */

static int executable(const struct stat *st)
{
	return S_ISREG(st->st_mode) &&
	       (st->st_mode & (S_IXUSR | S_IXGRP | S_IXOTH));
}

static void check_exec(struct hc *c)
{
	const char *const *argv = relay_app_command(c->app, NULL);
	int line = relay_app_command_line(c->app);
	const char *cmd = argv ? argv[0] : NULL, *name;
	char path[4096];
	struct stat st;

	if (!cmd || !*cmd)
		return;
	if (strchr(cmd, '/')) {
		/* Relative to the app directory (its working directory). */
		if (cmd[0] == '/')
			snprintf(path, sizeof(path), "%s", cmd);
		else
			snprintf(path, sizeof(path), "%s/%s", c->dir, cmd);
		if (stat(path, &st) != 0)
			problem(c, NULL, line, 1, "command \"%s\": %s", cmd,
				cmd[0] == '/' ? "no such file" :
				"no such file in the app directory");
		else if (!executable(&st))
			problem(c, NULL, line, 1, "command \"%s\": not an "
				"executable file", cmd);
		return;
	}
	/* A PATH of the app's own may name directories that only exist in
	 * the sandbox: nothing to say then. */
	if (app_sets(c, "PATH"))
		return;
	for (name = SANDBOX_PATH; *name;) {
		size_t n = strcspn(name, ":");

		snprintf(path, sizeof(path), "%.*s/%s", (int)n, name, cmd);
		if (stat(path, &st) == 0 && executable(&st))
			return;
		name += n + (name[n] == ':');
	}
	problem(c, NULL, line, 1, "command \"%s\": not found in the sandbox's "
		"PATH (" SANDBOX_PATH ")", cmd);
}

/* ---- the app ------------------------------------------------------ */

/* Who compilers run as: when root, the sandbox user (as relayd's
 * handlers and `app run` do: a name, a number, or "nobody" even without
 * a passwd entry). Returns 0, or -1 when unknown. */
static int sandbox_user(struct hc *c)
{
	const char *user = getenv("RELAY_SANDBOX_USER");
	struct passwd *pw;
	unsigned long n;
	char *end;

	if (geteuid() != 0)
		return 0;
	if (!user || !*user)
		user = "nobody";
	errno = 0;
	n = strtoul(user, &end, 10);
	if (*user >= '0' && *user <= '9' && *end == '\0' && errno == 0 &&
	    n == (uid_t)n) {
		pw = getpwuid((uid_t)n);
		c->uid = (uid_t)n;
		c->gid = pw ? pw->pw_gid : (gid_t)n;
	} else {
		pw = getpwnam(user);
		if (!pw && strcmp(user, "nobody") != 0)
			return -1;
		c->uid = pw ? pw->pw_uid : 65534;
		c->gid = pw ? pw->pw_gid : 65534;
	}
	if (c->uid == 0 || c->gid == 0)
		return -1;
	c->drop = 1;
	return 0;
}

/*
 * Can the sandbox user read and search the app directory (and so reach
 * it through every parent)? relayd and `app run` check exactly this as
 * that user before they start bwrap, and refuse to run the app's handlers
 * otherwise; the compilers would fail on it too, in their own words (a
 * line of node's loader). Asked in a child that became the user, as
 * the runtime does: its groups are its own gid only. Returns 0 (also
 * when relayctl is not root: nothing is switched), or the errno.
 */
static int dir_denied(const struct hc *c)
{
	int fd[2], e = 0, st;
	gid_t g = c->gid;
	pid_t pid;

	if (!c->drop || pipe2(fd, O_CLOEXEC) != 0)
		return 0;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return 0;
	}
	if (pid == 0) {
		if (setgroups(1, &g) != 0 || setgid(c->gid) != 0 ||
		    setuid(c->uid) != 0)
			e = EPERM;
		else if (access(c->dir, R_OK | X_OK) != 0)
			e = errno;
		(void)!write(fd[1], &e, sizeof(e));
		_exit(0);
	}
	close(fd[1]);
	if (read(fd[0], &e, sizeof(e)) != (ssize_t)sizeof(e))
		e = 0;
	close(fd[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return e;
}

/*
 * The host-side check of @c's kind. Its driver names the checker
 * (relay_runtime_kind_check_argv()); this file only runs it and reads its
 * answer, each protocol once, chosen by the checker's program. A kind
 * whose driver names none (exec) gets the command's file check.
 */
static void run_checker(struct hc *c)
{
	static const struct {
		const char *prog;
		void (*fn)(struct hc *c);
	} checkers[] = {
		{ "python3", check_python },
		{ "node", check_node },
	};
	size_t i;

	c->check_argv = relay_runtime_kind_check_argv(
		relay_app_runtime(c->app));
	if (!c->check_argv || !c->check_argv[0]) {
		check_exec(c);
		return;
	}
	for (c->check_argc = 0; c->check_argv[c->check_argc];)
		c->check_argc++;
	for (i = 0; i < sizeof(checkers) / sizeof(checkers[0]); i++)
		if (strcmp(c->check_argv[0], checkers[i].prog) == 0) {
			checkers[i].fn(c);
			return;
		}
}

/* The app run message and its fix, in validate's terms (doc/cli.md
 * L-2). */
static void dir_problem(struct hc *c, int e)
{
	problem(c, NULL, 1, 1, "app directory %s is not readable by the "
		"sandbox user (uid %ld): %s", c->dir, (long)c->uid,
		strerror(e));
	relayctl_error(RELAYCTL_FAIL, "validate: make %s and its parents "
		       "readable and searchable by the sandbox user, or set "
		       "RELAY_SANDBOX_USER to a user that can read it (relayd "
		       "and app run need the same)", c->dir);
}

int relayctl_check_handlers(const relay_app *app,
			    unsigned long long max_bytes)
{
	struct hc c = { .app = app, .dir = relay_app_dir(app),
			.max_bytes = max_bytes };
	int who = -1, denied = 0;
	const char *tpl = relay_app_template_path(app), *slash;
	size_t i;

	slash = strrchr(tpl, '/');
	c.shown = slash ? strndup(tpl, (size_t)(slash - tpl)) : strdup(".");
	for (i = 0; c.shown && i < relay_app_rule_count(app); i++) {
		const relay_app_rule *r = relay_app_rule_at(app, i);

		if (add_handler(&c, relay_app_rule_handler(r),
				relay_app_rule_line(r)))
			break;
	}
	for (i = 0; c.shown && i < relay_app_schedule_count(app); i++) {
		const relay_app_schedule *s = relay_app_schedule_at(app, i);

		if (add_handler(&c, relay_app_schedule_handler(s),
				relay_app_schedule_line(s)))
			break;
	}
	if (c.shown) {
		/* RELAY_SANDBOX=none: relayd's handlers run as relayd's own
		 * user, not the sandbox user, and nothing refuses the
		 * directory. */
		const char *sb = getenv("RELAY_SANDBOX");

		who = sandbox_user(&c);
		denied = who == 0 && !(sb && strcmp(sb, "none") == 0)
			 ? dir_denied(&c) : 0;
	}
	if (!c.shown) {
		problem(&c, NULL, 1, 1, "out of memory");
	} else if (who) {
		problem(&c, NULL, 1, 1, "cannot check the handlers: no user "
			"\"%s\" (RELAY_SANDBOX_USER) to compile them as",
			getenv("RELAY_SANDBOX_USER") ? getenv(
			"RELAY_SANDBOX_USER") : "nobody");
	} else if (denied) {
		dir_problem(&c, denied);
	} else {
		run_checker(&c);
	}
	for (i = 0; i < c.n; i++) {
		free(c.h[i].file);
		free(c.h[i].top);
	}
	free(c.h);
	free(c.shown);
	return c.problems;
}
