#!/usr/bin/env python3
"""check-log-ids.py SRCROOT [--print] - every log id is listed once.

The stable message ids of the log lines (RELAY-ENG04, RELAYD-APP09, ...)
and their meanings are the X-macro lists of include/relay/log_ids.h. This
check (meson test `log-ids`, suite `unit`) fails when

  * an id is used in a C file of librelay/, relayd/, relayctl/ or
    sandbox/ (a string literal, comments ignored) and is not in the list;
  * an id of the list is used nowhere;
  * an id is listed twice;
  * doc/log-ids.md does not list exactly the rows of the list, each as
    "| `ID` | meaning |" with the same meaning, library ids under
    "## The library's ids" and relayd's under "## relayd's ids";
  * a page of doc/ (or a man page) names an id that is not in the list.

With --print, prints the two tables doc/log-ids.md must hold. TAP output.
"""
import os
import re
import sys

ID = re.compile(r'^RELAY(?:D|-[A-Z]+)(?:-?[A-Z]+)?[0-9]{2}$')
ID_IN_TEXT = re.compile(r'\bRELAY(?:D(?:-[A-Z]+)?|-[A-Z]+)[0-9]{2}\b')
STRING = r'"(?:[^"\\\n]|\\.)*"'
TOKEN = re.compile(r'(' + STRING + r')|(/\*.*?\*/)|(//[^\n]*)|'
                   r"('(?:[^'\\\n]|\\.)*')", re.S)
SRC_DIRS = ('librelay', 'relayd', 'relayctl', 'sandbox')
HEADER = os.path.join('include', 'relay', 'log_ids.h')
DOC = os.path.join('doc', 'log-ids.md')
SECTIONS = (('RELAY_LIBRARY_LOG_IDS', "## The library's ids"),
            ('RELAYD_LOG_IDS', "## relayd's ids"))


def unquote(lit):
    return bytes(lit[1:-1], 'utf-8').decode('unicode_escape')


def table(root, macro):
    """[(id, meaning)] of X-macro list @macro, in order."""
    text = open(os.path.join(root, HEADER)).read()
    m = re.search(r'#define ' + macro + r'\(X\) \\\n(.*?)(?<!\\)\n', text,
                  re.S)
    if not m:
        raise SystemExit(f'{HEADER}: no {macro}(X)')
    body = m.group(1).replace('\\\n', ' ')
    rows = []
    for row in re.finditer(r'X\(\s*(' + STRING + r')\s*,\s*((?:' + STRING +
                           r'\s*)+)\)', body):
        parts = re.findall(STRING, row.group(2))
        rows.append((unquote(row.group(1)),
                     ''.join(unquote(p) for p in parts)))
    return rows


def used_ids(root):
    """{id: first file:line} of the ids the C sources use."""
    out = {}
    for d in SRC_DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, d)):
            for f in sorted(files):
                if not f.endswith(('.c', '.h')):
                    continue
                path = os.path.join(dirpath, f)
                text = open(path, errors='replace').read()
                for m in TOKEN.finditer(text):
                    if not m.group(1):
                        continue
                    v = m.group(1)[1:-1]
                    if ID.match(v):
                        line = text.count('\n', 0, m.start()) + 1
                        out.setdefault(v, '%s:%d' % (
                            os.path.relpath(path, root), line))
    return out


def doc_rows(root):
    """{section: [(id, meaning)]} of doc/log-ids.md."""
    try:
        text = open(os.path.join(root, DOC)).read()
    except OSError:
        text = ''
    out = {}
    for _, title in SECTIONS:
        if title + '\n' not in text:
            out[title] = None
            continue
        part = text.split(title + '\n', 1)[1].split('\n## ', 1)[0]
        out[title] = re.findall(r'^\| `([A-Z0-9-]+)` \| (.*?) \|$', part,
                                re.M)
    return out


def md_table(rows):
    lines = ['| id | meaning |', '|---|---|']
    lines += ['| `%s` | %s |' % (i, m) for i, m in rows]
    return '\n'.join(lines)


def main():
    root = sys.argv[1]
    lists = {macro: table(root, macro) for macro, _ in SECTIONS}
    if '--print' in sys.argv[2:]:
        for macro, title in SECTIONS:
            print(title + '\n\n' + md_table(lists[macro]) + '\n')
        return 0
    results = []
    listed = [i for rows in lists.values() for i, _ in rows]
    meaning = {i: m for rows in lists.values() for i, m in rows}
    dup = sorted({i for i in listed if listed.count(i) > 1})
    results.append((not dup, 'no id is listed twice', dup))
    bad = [i for i in listed if not ID.match(i)]
    results.append((not bad, 'every listed id is well-formed', bad))
    empty = [i for i, m in meaning.items() if not m.strip()]
    results.append((not empty, 'every id has a meaning', empty))
    used = used_ids(root)
    missing = ['%s (%s)' % (i, w) for i, w in sorted(used.items())
               if i not in meaning]
    results.append((not missing, 'every id the sources use is in '
                    + HEADER, missing))
    unused = [i for i in listed if i not in used]
    results.append((not unused, 'every listed id is used in the sources',
                    unused))
    for macro, title in SECTIONS:
        want = lists[macro]
        got = doc_rows(root)[title]
        if got is None:
            results.append((False, '%s lists %s' % (DOC, macro),
                            ['no section "%s"' % title]))
            continue
        diff = ['missing: | `%s` | %s |' % r for r in want if r not in got]
        diff += ['not in %s: | `%s` | %s |' % ((macro,) + r) for r in got
                 if r not in want]
        results.append((not diff, '%s "%s" lists %s, each with its '
                        'meaning' % (DOC, title[3:], macro), diff))
    stray = []
    for sub in ('doc', os.path.join('doc', 'man')):
        d = os.path.join(root, sub)
        for f in sorted(os.listdir(d)):
            if not f.endswith(('.md', '.scd')):
                continue
            text = open(os.path.join(d, f), errors='replace').read()
            for m in ID_IN_TEXT.finditer(text):
                if m.group(0) not in meaning:
                    stray.append('%s: %s' % (os.path.join(sub, f),
                                             m.group(0)))
    results.append((not stray, 'the docs name only listed ids',
                    sorted(set(stray))))
    print('TAP version 13')
    print('1..%d' % len(results))
    for n, (ok, what, why) in enumerate(results, 1):
        print('%sok %d - %s' % ('' if ok else 'not ', n, what))
        for w in why if not ok else []:
            print('# ' + w)
    return 0 if all(r[0] for r in results) else 1


if __name__ == '__main__':
    sys.exit(main())
