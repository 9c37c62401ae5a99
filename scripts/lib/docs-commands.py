#!/usr/bin/env python3
"""The docs' wirebench commands in a form that measures nothing, one per line, for
scripts/docs-outputs.sh: each `run` as --dry-run, the listing commands as written, --help
of every subcommand they use."""
import glob
import re
files = ['README.md'] + sorted(glob.glob('docs/**/*.md', recursive=True))
out, subs = [], set()
for f in files:
    inb, buf = False, ''
    for line in open(f):
        if line.startswith('```sh'):
            inb = True; continue
        if line.startswith('```'):
            inb = False; continue
        if not inb:
            continue
        l = line.rstrip('\n')
        if l.endswith('\\'):
            buf += l[:-1]; continue
        l, buf = buf + l, ''
        l = re.sub(r'\s+#.*$', '', l.strip())
        l = re.sub(r'^cargo run --release -p wirebench --', 'wirebench', l)
        l = re.sub(r'^sudo ', '', l)
        m = re.match(r'wirebench (\S+)', l)
        if not m or '|' in l or '&' in l or '>' in l:
            continue
        sub = m.group(1)
        subs.add(sub)
        if sub == 'run':
            out.append(l + ' --dry-run')
        elif sub in ('scenarios', 'links', 'protocols'):
            out.append(l)
for s in sorted(subs) + ['protocols', 'params']:
    out.append(f'wirebench {s} --help')
print('\n'.join(dict.fromkeys(out)))
