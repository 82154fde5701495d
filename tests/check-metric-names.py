#!/usr/bin/env python3
"""check-metric-names.py SRCROOT - every metric name is written once.

The figures relayd shows in /metrics and its stats file, and relayctl
prints, are declared in the X-macro lists of include/relay/metrics.h (the
engine's) and include/relay/daemon_metrics.h (relayd's own). This check
(meson test `metric-names`, suite `unit`) fails when

  * a name of those lists (a stats file key, a Prometheus family, a label
    value, a relayctl label or key: every string of a row but the HELP
    texts) is spelled out as a string literal in a C file of relayd/ or
    relayctl/: a writer must expand the list instead;
  * two rows give the same Prometheus family (the engine's derived ones,
    "relay_<key>" plus "_total" for a counter, included) or the same stats
    file key within one list.

TAP output.
"""
import os
import re
import sys

# A name that is one plain word ("failed", "ready", "warm") is also
# written for other things (a control reply, a health state): it is
# checked in the writers of the figures only, where it can be nothing
# else, but for the stats file's object keys listed in STRUCTURE.
WORD = re.compile(r'[a-z]+')
WRITERS = {'relayd/stats.c', 'relayd/warmstats.c', 'relayctl/cmd_stats.c'}
STRUCTURE = {('relayd/stats.c', 'warm')}

# Columns that are not names (a Prometheus TYPE).
NOT_NAMES = {('RELAY_WARM_FIGURES', 1)}

LISTS = {
    # list macro: (header, index of the key, of the Prometheus family,
    #              of the help text; None: no such column)
    'RELAY_CONSUMER_METRICS': ('metrics.h', 3, 4, 5),
    'RELAY_SCHEDPUB_FIGURES': ('daemon_metrics.h', 2, 3, 4),
    'RELAY_RETENTION_FIGURES': ('daemon_metrics.h', 2, 3, 4),
    'RELAY_APPS_FIGURES': ('daemon_metrics.h', 2, 3, 4),
    'RELAY_HANDLER_OUTCOMES': ('daemon_metrics.h', 1, None, None),
    'RELAY_START_PATHS': ('daemon_metrics.h', 2, None, None),
    'RELAY_WARM_PARENT_STATES': ('daemon_metrics.h', 1, None, None),
    'RELAY_WARM_FIGURES': ('daemon_metrics.h', 4, 2, 3),
    'RELAY_TRACE_EXPORT_FIGURES': ('daemon_metrics.h', None, 2, 3),
}

STRING = r'"(?:[^"\\\n]|\\.)*"'
TOKEN = re.compile(r'(' + STRING + r')|(/\*.*?\*/)|(//[^\n]*)|'
                   r"('(?:[^'\\\n]|\\.)*')|([(),])|" r'([^\s"\'(),/]+|/)',
                   re.S)


def tokens(text):
    """(kind, text, offset) of C tokens, comments dropped; kind 's' for a
    string literal, 'p' for ( ) or a comma, 'o' otherwise."""
    for m in TOKEN.finditer(text):
        if m.group(1):
            yield 's', m.group(1), m.start()
        elif m.group(2) or m.group(3):
            continue
        elif m.group(4):
            yield 'o', m.group(4), m.start()
        elif m.group(5):
            yield 'p', m.group(5), m.start()
        else:
            yield 'o', m.group(6), m.start()


class Lit(str):
    """A row argument that is a string literal (a name or a text)."""


def literal(parts):
    """The value of adjacent string literals ("a" "b" -> "ab")."""
    return ''.join(bytes(p[1:-1], 'utf-8').decode('unicode_escape')
                   for p in parts)


def rows(header, macro):
    """The rows of list @macro: each a list of arguments, a string
    argument as its value, any other as its text."""
    text = open(header).read()
    m = re.search(r'#define ' + macro + r'\(X\)((?:[^\n]*\\\n)*[^\n]*)',
                  text)
    if not m:
        return None
    body = m.group(1).replace('\\\n', ' ')
    out, args, cur, depth = [], [], [], 0
    for kind, t, _ in tokens(body):
        if kind == 'p' and t == '(':
            depth += 1
            if depth == 1:
                args, cur = [], []
                continue
        elif kind == 'p' and t == ')':
            depth -= 1
            if depth == 0:
                args.append(cur)
                out.append(args)
                continue
        elif kind == 'p' and t == ',' and depth == 1:
            args.append(cur)
            cur = []
            continue
        if depth >= 1:
            cur.append((kind, t))
    result = []
    for args in out:
        row = []
        for a in args:
            if a and all(k == 's' for k, _ in a):
                row.append(Lit(literal([t for _, t in a])))
            else:
                row.append(' '.join(t for _, t in a))
        result.append(row)
    return result


def c_files(root, dirs):
    for d in dirs:
        for base, _, names in os.walk(os.path.join(root, d)):
            for n in sorted(names):
                if n.endswith(('.c', '.h')):
                    yield os.path.join(base, n)


def main():
    root = sys.argv[1]
    inc = os.path.join(root, 'include', 'relay')
    results = []
    names = {}      # name -> list macro it comes from
    families = {}   # Prometheus family -> list macro
    for macro, (hdr, key, prom, help_) in LISTS.items():
        table = rows(os.path.join(inc, hdr), macro)
        if not table:
            results.append((False, '%s found in %s' % (macro, hdr), []))
            continue
        results.append((True, '%s found in %s (%d rows)' %
                        (macro, hdr, len(table)), []))
        keys, why = set(), []
        for r in table:
            ident = r[0]
            # every string of the row but the help text is a name
            for i, v in enumerate(r):
                if isinstance(v, Lit) and i != help_ and \
                        (macro, i) not in NOT_NAMES:
                    names.setdefault(v, macro)
            k = r[key] if key is not None else None
            if macro == 'RELAY_CONSUMER_METRICS':
                k = k if k != '0' else ident
            if k and k != '0':
                if k in keys:
                    why.append('stats file key %r twice' % k)
                keys.add(k)
            if prom is not None:
                p = r[prom]
                if macro == 'RELAY_CONSUMER_METRICS' and p == '0':
                    p = 'relay_%s%s' % (k, '_total' if r[1] ==
                                        'RELAY_METRIC_COUNTER' else '')
                if p in families:
                    why.append('Prometheus family %s in %s and %s' %
                               (p, families[p], macro))
                families[p] = macro
        results.append((not why, '%s: no name twice' % macro, why))
    # No name of the lists spelled out in a program.
    for path in c_files(root, ['relayd', 'relayctl']):
        rel = os.path.relpath(path, root)
        text = open(path, encoding='utf-8', errors='replace').read()
        why = []
        for kind, t, pos in tokens(text):
            if kind != 's':
                continue
            try:
                v = literal([t])
            except (UnicodeDecodeError, ValueError):
                continue
            if v in names and (not WORD.fullmatch(v) or
                               rel in WRITERS and
                               (rel, v) not in STRUCTURE):
                line = text.count('\n', 0, pos) + 1
                why.append('line %d: "%s" is a name of %s: expand the '
                           'list instead' % (line, v, names[v]))
        results.append((not why, '%s writes no name of the lists' % rel,
                        why))
    print('TAP version 13')
    print('1..%d' % len(results))
    fail = 0
    for n, (ok, what, why) in enumerate(results, 1):
        print('%sok %d - %s' % ('' if ok else 'not ', n, what))
        for w in why:
            print('# ' + w)
        fail |= not ok
    return 1 if fail else 0


if __name__ == '__main__':
    sys.exit(main())
