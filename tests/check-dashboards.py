#!/usr/bin/env python3
"""check-dashboards.py [--promtool] SRCROOT - the shipped alert rules and
dashboard (dist/relay-alerts.rules.yml, dist/relay-dashboard.json) name
only metrics relayd exports; with --promtool, `promtool check rules`
accepts the rules file (exit 77, a skip, when promtool, from Debian's
prometheus package, is not installed).

The exported families are read from the code, not from a copy:

  * the X-macro lists of include/relay/metrics.h and
    include/relay/daemon_metrics.h, with check-metric-names.py's own
    parser (a consumer figure without a family is "relay_<key>", plus
    "_total" for a counter);
  * the families relayd/*.c writes by name: `name[] = "relay_..."`
    followed by its `# TYPE %s <type>`, `# TYPE relay_... <type>`
    literals and procmetrics.c's `family(f, "process_...", "<type>"`.

Every identifier of either file that looks like a metric (relay_ or
process_ followed by [a-z_]) must be such a family, or a histogram's
family plus _bucket, _sum or _count. Each PromQL expression of the rules
and of the dashboard's targets is also checked on its own, and every
alert has a severity label and a summary. Needs python3-yaml (exit 77
without it).

TAP output.
"""
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

try:
    import yaml
except ImportError:
    yaml = None

METRIC = re.compile(r'(?<![A-Za-z0-9_:])((?:relay|process)_[a-z_]+)'
                    r'(?![A-Za-z0-9_(])')
HIST_SUFFIXES = ('_bucket', '_sum', '_count')


def load_names_module(root):
    path = os.path.join(root, 'tests', 'check-metric-names.py')
    spec = importlib.util.spec_from_file_location('metric_names', path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def exported(root):
    """{family: type} of every family relayd's /metrics can show."""
    mn = load_names_module(root)
    inc = os.path.join(root, 'include', 'relay')
    fam = {}
    for macro, (hdr, key, prom, _help) in mn.LISTS.items():
        if prom is None:
            continue
        for r in mn.rows(os.path.join(inc, hdr), macro) or []:
            p = r[prom]
            if macro == 'RELAY_CONSUMER_METRICS':
                k = r[key] if r[key] != '0' else r[0]
                counter = r[1] == 'RELAY_METRIC_COUNTER'
                if p == '0':
                    p = 'relay_%s%s' % (k, '_total' if counter else '')
                fam[p] = 'counter' if counter else 'gauge'
            elif re.fullmatch(r'(?:relay|process)_[a-z_]+', str(p)):
                # a row's TYPE column, where it has one (warm figures)
                types = [v for v in r if v in ('counter', 'gauge',
                                               'histogram', 'summary')]
                fam[str(p)] = types[0] if types else \
                    'counter' if str(p).endswith('_total') else 'gauge'
    relayd = os.path.join(root, 'relayd')
    for base, _, names in os.walk(relayd):
        for n in sorted(names):
            if not n.endswith('.c'):
                continue
            text = open(os.path.join(base, n), encoding='utf-8',
                        errors='replace').read()
            for m in re.finditer(r'name\[\] = "((?:relay|process)_[a-z_]+)"'
                                 r'.*?# TYPE %s (\w+)', text, re.S):
                fam[m.group(1)] = m.group(2)
            for m in re.finditer(r'# TYPE ((?:relay|process)_[a-z_]+) '
                                 r'(\w+)', text):
                fam[m.group(1)] = m.group(2)
            for m in re.finditer(r'family\(f, "((?:relay|process)_[a-z_]+)"'
                                 r',\s*"(\w+)"', text):
                fam[m.group(1)] = m.group(2)
    return fam


def known(name, fam):
    if name in fam:
        return True
    for s in HIST_SUFFIXES:
        if name.endswith(s) and fam.get(name[:-len(s)]) in ('histogram',
                                                             'summary'):
            return True
    return False


def unknown(text, fam):
    return sorted({n for n in METRIC.findall(text) if not known(n, fam)})


def rule_exprs(rules):
    for g in rules.get('groups', []):
        for r in g.get('rules', []):
            yield r.get('alert') or r.get('record'), r['expr']


def dashboard_exprs(d):
    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if k == 'expr' and isinstance(v, str):
                    yield v
                else:
                    yield from walk(v)
        elif isinstance(o, list):
            for v in o:
                yield from walk(v)
    return list(walk(d))


def promtool_check(rules_path):
    promtool = shutil.which('promtool')
    if not promtool:
        print('promtool not installed (Debian package prometheus): skipped')
        return 77
    p = subprocess.run([promtool, 'check', 'rules', rules_path],
                       capture_output=True, text=True, timeout=60)
    print('TAP version 13\n1..1')
    print('%sok 1 - promtool check rules %s' %
          ('' if p.returncode == 0 else 'not ', rules_path))
    for line in (p.stdout + p.stderr).splitlines():
        print('# ' + line)
    return 0 if p.returncode == 0 else 1


def main():
    args = sys.argv[1:]
    root = args[-1]
    rules_path = os.path.join(root, 'dist', 'relay-alerts.rules.yml')
    dash_path = os.path.join(root, 'dist', 'relay-dashboard.json')
    if args[0] == '--promtool':
        return promtool_check(rules_path)
    if yaml is None:
        print('python3-yaml not installed: skipped')
        return 77
    results = []

    fam = exported(root)
    # The extraction itself: a few families every relayd has.
    must = ['relay_redis_up', 'relay_dlq_entries_total',
            'relay_handler_outcomes_total', 'relay_build_info',
            'process_start_time_seconds']
    results.append((all(m in fam for m in must) and
                    fam.get('relay_handler_duration_seconds') == 'histogram',
                    'the exported families are found in the code (%d)' %
                    len(fam), [m for m in must if m not in fam], None))

    rules_text = open(rules_path).read()
    rules = yaml.safe_load(rules_text)
    exprs = list(rule_exprs(rules))
    why = unknown(rules_text, fam)
    for name, e in exprs:
        why += ['%s: %s' % (name, n) for n in unknown(e, fam)]
    results.append((not why and len(exprs) > 0,
                    'every metric the rules name is exported (%d rules)' %
                    len(exprs), why, None))

    dash_text = open(dash_path).read()
    dash = json.loads(dash_text)
    dexprs = dashboard_exprs(dash)
    why = unknown(dash_text, fam)
    for e in dexprs:
        why += ['%r: %s' % (e, n) for n in unknown(e, fam)]
    results.append((not why and len(dexprs) > 0,
                    'every metric the dashboard queries is exported '
                    '(%d queries)' % len(dexprs), why, None))

    # Each alert of the rules file has a summary and a severity.
    why = []
    for g in rules['groups']:
        for r in g['rules']:
            if 'alert' in r and not (r.get('labels', {}).get('severity')
                                     and r.get('annotations', {})
                                     .get('summary')):
                why.append(r['alert'])
    results.append((not why, 'every alert has a severity and a summary',
                    why, None))

    print('TAP version 13')
    print('1..%d' % len(results))
    fail = 0
    for n, (ok, what, why, skip) in enumerate(results, 1):
        print('%sok %d - %s%s' % ('' if ok else 'not ', n, what,
                                 ' # SKIP ' + skip if skip else ''))
        for w in why:
            print('# ' + w)
        fail |= not ok
    return 1 if fail else 0


if __name__ == '__main__':
    sys.exit(main())
