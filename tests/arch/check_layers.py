#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""arch.layers: the folders of core/ keep to their layers.

Fails when
  - a file of core/ includes a header of a folder its own may not use (the
    allowed graph is the "may include" column of core/README.md's folder
    table, taken transitively), or includes another folder by a relative
    path ("../x/y.h" would get past the include roots CMake gives each
    target, so it is refused outright);
  - two or more files of one folder depend on each other in a cycle, at the
    symbol level (a file uses a global symbol another file of the folder
    defines: `nm` of the object files in the build tree), except in the
    folders core/README.md lists as known exceptions; an exception whose
    folder has no cycle any more is an error too (drop it);
  - the folder table itself has a cycle, or a compiled file of core/ lies
    in no folder of the table.

usage: check_layers.py --source DIR --build DIR   (the build's
       compile_commands.json names the objects)
       check_layers.py --self-test                (proves the check fails
       on a planted cycle and a planted forbidden include)
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
EXCEPTIONS_RE = re.compile(r'^Known file-cycle exceptions:(.*)$')


def parse_readme(path):
    """The folder table ({folder: set of folders it may include}) and the
    known file-cycle exceptions of core/README.md."""
    folders, exceptions = {}, set()
    col = None
    with open(path, encoding='utf-8') as f:
        for line in f:
            s = line.strip()
            m = EXCEPTIONS_RE.match(s)
            if m:
                exceptions |= set(re.findall(r'`([^`]+)`', m.group(1)))
                continue
            if not s.startswith('|'):
                if col is not None and folders:
                    col = -1  # the table ended
                continue
            cells = [c.strip() for c in s.strip('|').split('|')]
            if col is None and cells and cells[0].lower() == 'folder':
                heads = [c.lower() for c in cells]
                if 'may include' not in heads:
                    sys.exit(f'{path}: the folder table has no "may include" column')
                col = heads.index('may include')
                continue
            if col is None or col < 0 or set(cells[0]) <= set('-: '):
                continue
            names = re.findall(r'`([^`]+)`', cells[0])
            if not names:
                continue
            folders[names[0]] = set(re.findall(r'`([^`]+)`', cells[col]))
    if not folders:
        sys.exit(f'{path}: no folder table (| folder | ... | may include |) found')
    return folders, exceptions


def closure(folders):
    """Every folder each folder may reach, and the table's own cycles."""
    problems = []
    for name, deps in folders.items():
        for d in deps:
            if d not in folders:
                problems.append(f'core/README.md: {name} may include {d}, which is not in the table')
    reach = {}
    for name in folders:
        seen, todo = set(), list(folders[name])
        while todo:
            d = todo.pop()
            if d in seen or d not in folders:
                continue
            seen.add(d)
            todo.extend(folders[d])
        reach[name] = seen
        if name in seen:
            problems.append(f'core/README.md: the folder table has a cycle through {name}')
    return reach, problems


def folder_of(rel, folders):
    """The table folder a path relative to the project root lies in."""
    best = None
    for name in folders:
        root = 'include' if name == 'include' else 'core/' + name
        if rel == root or rel.startswith(root + '/'):
            if best is None or len(name) > len(best):
                best = name
    return best


def check_includes(src, folders, reach):
    problems = []
    core = os.path.join(src, 'core')
    for dirpath, dirnames, filenames in os.walk(core):
        dirnames.sort()
        for fn in sorted(filenames):
            if not fn.endswith(('.c', '.h')):
                continue
            path = os.path.join(dirpath, fn)
            rel = os.path.relpath(path, src)
            own = folder_of(rel, folders)
            if own is None:
                problems.append(f'{rel}: in no folder of core/README.md\'s table')
                continue
            with open(path, encoding='utf-8', errors='replace') as f:
                for no, line in enumerate(f, 1):
                    m = INCLUDE_RE.match(line)
                    if not m:
                        continue
                    kind, name = m.groups()
                    where = f'{rel}:{no}: #include {kind}{name}{">" if kind == "<" else chr(34)}'
                    target = None
                    if kind == '<':
                        if name == 'agentsandbox.h' or name.startswith('agentsandbox/'):
                            target = 'include/' + name
                        else:
                            continue  # a system header
                    else:
                        relative = '..' in name.split('/')
                        for cand in (os.path.join(dirpath, name), os.path.join(core, name),
                                     os.path.join(src, 'include', name)):
                            if os.path.isfile(cand):
                                target = os.path.relpath(os.path.realpath(cand), src)
                                break
                        if target is None:
                            problems.append(f'{where}: no such header in the tree')
                            continue
                    to = folder_of(target, folders)
                    if kind == '"' and relative and to != own:
                        problems.append(f'{where}: a relative path out of the folder; '
                                        'include another folder as "<folder>/<file>.h" '
                                        '(its include root)')
                    if to is None:
                        problems.append(f'{where}: {target} is in no folder of the table')
                    elif to != own and to not in reach[own]:
                        problems.append(f'{where}: {own} may not include {to} '
                                        f'({own} may include: {", ".join(sorted(reach[own])) or "nothing"})')
    return problems


def objects(build, src):
    """{source path relative to src: object path} for the sources of core/."""
    with open(os.path.join(build, 'compile_commands.json'), encoding='utf-8') as f:
        db = json.load(f)
    out = {}
    for e in db:
        rel = os.path.relpath(os.path.realpath(e['file']), os.path.realpath(src))
        if not rel.startswith('core/') or not rel.endswith('.c') or rel in out:
            continue
        args = e['arguments'] if 'arguments' in e else shlex.split(e['command'])
        obj = e.get('output')
        if obj is None and '-o' in args:
            obj = args[args.index('-o') + 1]
        if obj is None:
            continue
        obj = os.path.join(e['directory'], obj)
        if os.path.isfile(obj):
            out[rel] = obj
    return out


def symbols(objs):
    """{object: (defined globals, undefined)} of object files (one nm)."""
    out = {o: (set(), set()) for o in objs}
    if not objs:
        return out
    res = subprocess.run(['nm', '-P', '-A'] + list(objs), check=True, capture_output=True,
                         text=True)
    for line in res.stdout.splitlines():
        obj, sep, rest = line.partition(': ')
        parts = rest.split()
        if not sep or obj not in out or len(parts) < 2:
            continue
        name, t = parts[0], parts[1]
        if t in ('U', 'w', 'v'):
            out[obj][1].add(name)
        elif t.isupper():
            out[obj][0].add(name)
    return out


def sccs(nodes, edges):
    """Tarjan's strongly connected components of size > 1."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def check_cycles(build, src, folders, exceptions):
    problems, notes = [], []
    by_folder = {}
    objs = objects(build, src)
    syms = symbols(sorted(objs.values()))
    for rel, obj in objs.items():
        f = folder_of(rel, folders)
        if f is None:
            problems.append(f'{rel}: compiled, but in no folder of core/README.md\'s table')
            continue
        by_folder.setdefault(f, {})[rel] = syms[obj]
    for e in sorted(exceptions):
        if e not in folders:
            problems.append(f'core/README.md: the file-cycle exception {e} is not a folder')
    for f in sorted(by_folder):
        files = by_folder[f]
        owner = {}
        for rel, (defined, _) in files.items():
            for s in defined:
                owner.setdefault(s, rel)
        edges, why = {}, {}
        for rel, (_, undefined) in files.items():
            for s in undefined:
                o = owner.get(s)
                if o and o != rel:
                    edges.setdefault(rel, set()).add(o)
                    why.setdefault((rel, o), []).append(s)
        comps = sccs(files.keys(), edges)
        for comp in comps:
            lines = [f'{f}: a cycle between {len(comp)} files:']
            for a in comp:
                for b in comp:
                    if (a, b) in why:
                        syms = sorted(why[(a, b)])
                        more = f' (+{len(syms) - 4})' if len(syms) > 4 else ''
                        lines.append(f'    {os.path.basename(a)} -> {os.path.basename(b)}: '
                                     f'{", ".join(syms[:4])}{more}')
            (notes if f in exceptions else problems).append('\n'.join(lines))
        if f in exceptions and not comps:
            problems.append(f'core/README.md: {f} is listed as a file-cycle exception but has '
                            'no cycle any more: remove it from the list')
        if f not in exceptions and not comps:
            notes.append(f'{f}: {len(files)} files, no cycle')
    return problems, notes


def run(src, build):
    folders, exceptions = parse_readme(os.path.join(src, 'core', 'README.md'))
    reach, problems = closure(folders)
    problems += check_includes(src, folders, reach)
    p, notes = check_cycles(build, src, folders, exceptions)
    problems += p
    for n in notes:
        print(('known exception: ' if 'cycle between' in n else '') + n)
    for p in problems:
        print('FAIL: ' + p)
    print(f'arch.layers: {len(problems)} problem(s)')
    return 1 if problems else 0


SELF_README = """# planted
| folder | what | may include |
|---|---|---|
| `low` | below | — |
| `high` | above | `low` |
Known file-cycle exceptions: none
"""


def self_test():
    """Plants a file cycle and a forbidden include in a scratch tree and
    checks that both are reported; then the same tree without them passes."""
    cc = shutil.which('cc') or shutil.which('gcc') or shutil.which('clang')
    if not cc:
        sys.exit('self-test: no C compiler')
    top = tempfile.mkdtemp(prefix='asb-arch-')
    try:
        def tree(cycle, bad_include):
            src = os.path.join(top, f'src{int(cycle)}{int(bad_include)}')
            for d in ('core/low', 'core/high', 'build'):
                os.makedirs(os.path.join(src, d))
            files = {
                'core/README.md': SELF_README,
                'core/low/a.h': 'int a(int);\n',
                'core/low/b.h': 'int b(int);\n',
                'core/low/a.c': '#include "a.h"\n#include "b.h"\nint a(int n) { return n ? b(n - 1) : 0; }\n',
                'core/low/b.c': ('#include "b.h"\n#include "a.h"\nint b(int n) { return n ? a(n - 1) : 1; }\n'
                                 if cycle else '#include "b.h"\nint b(int n) { return n; }\n'),
                'core/high/h.c': ('#include "low/a.h"\n' +
                                  ('#include "high/../low/b.h"\n' if bad_include else '') +
                                  'int h(void);\nint h(void) { return a(3); }\n'),
            }
            if bad_include:
                files['core/low/c.c'] = '#include "high/h.h"\nint c(void);\nint c(void) { return 0; }\n'
                files['core/high/h.h'] = 'int h(void);\n'
            db = []
            for rel, text in files.items():
                with open(os.path.join(src, rel), 'w', encoding='utf-8') as f:
                    f.write(text)
            for rel in files:
                if rel.endswith('.c'):
                    obj = os.path.join(src, 'build', rel.replace('/', '_') + '.o')
                    cmd = [cc, '-I', os.path.join(src, 'core'), '-c', os.path.join(src, rel), '-o', obj]
                    subprocess.run(cmd, check=True)
                    db.append({'directory': os.path.join(src, 'build'), 'file': os.path.join(src, rel),
                               'arguments': cmd})
            with open(os.path.join(src, 'build', 'compile_commands.json'), 'w', encoding='utf-8') as f:
                json.dump(db, f)
            return src

        results = {}
        for cycle, bad in ((True, False), (False, True), (False, False)):
            src = tree(cycle, bad)
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), '--source', src,
                                   '--build', os.path.join(src, 'build')],
                                  capture_output=True, text=True)
            results[(cycle, bad)] = proc
            print(f'--- planted cycle={cycle} forbidden include={bad}: exit {proc.returncode}')
            print(proc.stdout, end='')
        ok = True
        c = results[(True, False)]
        if c.returncode == 0 or 'a cycle between 2 files' not in c.stdout or 'a.c -> b.c: b' not in c.stdout:
            print('self-test: the planted cycle was not reported')
            ok = False
        i = results[(False, True)]
        if (i.returncode == 0 or 'low may not include high' not in i.stdout
                or 'a relative path out of the folder' not in i.stdout):
            print('self-test: the planted forbidden includes were not reported')
            ok = False
        if results[(False, False)].returncode != 0:
            print('self-test: the clean tree failed')
            ok = False
        print('self-test: ' + ('ok' if ok else 'FAILED'))
        return 0 if ok else 1
    finally:
        shutil.rmtree(top, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--source')
    ap.add_argument('--build')
    ap.add_argument('--self-test', action='store_true')
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if not a.source or not a.build:
        ap.error('--source and --build are required')
    return run(os.path.abspath(a.source), os.path.abspath(a.build))


if __name__ == '__main__':
    sys.exit(main())
