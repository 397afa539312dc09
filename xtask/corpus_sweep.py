#!/usr/bin/env python3
"""Sweep of shaders written by others through `spv-subgroup` (docs/corpus.md).

Compiles every shader of a checkout of glslang's test suite (`Test/`: GLSL of every stage, and
`hlsl.*` as HLSL with entry `main`) with `glslangValidator -V` for the first of Vulkan 1.1, 1.2
and 1.3 that takes it, assembles the `.spvasm` files of any other folders given, then for every
module:

- `spirv-val` and `spv-subgroup validate` with the module's environment (a disagreement is listed);
- `spv-subgroup lower` for every preset, and for `vulkan1.1` at subgroup sizes 1, 4, 64 and 128;
  every changed output through `spirv-val`, our `validate` with the target, and a second `lower`
  that must leave it unchanged.

It needs the network-free tools of `cargo xtask install-deps` and the inputs on disk, which CI does
not have (no network there): run it by hand, e.g.
`git -C GLSLANG archive HEAD Test | tar -x -C /tmp/corpus/glslang` then
`python3 xtask/corpus_sweep.py --glslang /tmp/corpus/glslang/Test --spvasm NAGA/naga/tests/in/spv
--bin target/release/spv-subgroup --work /tmp/corpus/work`.
Prints a summary in Markdown; exits 1 when any output fails a check or any run crashes (exit
codes other than 0 and 1: 3 is our internal error).
"""
import argparse
import collections
import concurrent.futures as cf
import json
import os
import subprocess
import sys

STAGES = {'vert', 'frag', 'comp', 'geom', 'tesc', 'tese', 'mesh', 'task',
          'rgen', 'rchit', 'rahit', 'rmiss', 'rint', 'rcall'}
PRESETS = ['vulkan1.1', 'lavapipe', 'nvidia', 'khr-ballot', 'naga']
SIZES = [1, 4, 64, 128]


def run(cmd, timeout=120):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors='replace', timeout=timeout)
        return p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        return 'timeout', ''


def compile_glsl(args, name):
    out = os.path.join(args.work, 'spv', name + '.spv')
    for env in ['vulkan1.1', 'vulkan1.2', 'vulkan1.3']:
        cmd = ['glslangValidator', '-V', '--target-env', env, os.path.join(args.glslang, name), '-o', out]
        if name.startswith('hlsl.'):
            cmd[1:1] = ['-D', '-e', 'main']
        if run(cmd)[0] == 0:
            return name, out, env
    return name, None, None


def assemble(args, path):
    name = os.path.basename(path)
    out = os.path.join(args.work, 'spv', name + '.spv')
    for env in ['vulkan1.1', 'vulkan1.2', 'vulkan1.3']:
        if run(['spirv-as', '--target-env', env, path, '-o', out])[0] == 0:
            return name, out, env
    return name, None, None


def same_bytes(a, b):
    with open(a, 'rb') as x, open(b, 'rb') as y:
        return x.read() == y.read()


def sweep_one(args, item):
    name, spv, env = item
    res = {'name': name, 'env': env, 'problems': []}
    res['spirv_val'] = run(['spirv-val', '--target-env', env, spv])[0]
    rc, out = run([args.bin, 'validate', '--target-env', env, '-q', spv])
    res['validate'] = rc
    if rc not in (0, 1):
        res['problems'].append(f'validate exited {rc}: {out[-300:]}')
    elif rc == 1 and res['spirv_val'] == 0:
        res['validate_only'] = out[-400:]
    res['lower'] = []
    for preset, size in [(p, None) for p in PRESETS] + [('vulkan1.1', s) for s in SIZES]:
        o = os.path.join(args.work, 'out', f'{name}.{preset}.{size}.spv')
        extra = ['--subgroup-size', str(size)] if size else []
        rc, msg = run([args.bin, 'lower', spv, '-o', o, '--target', preset, '-q'] + extra)
        e = {'preset': preset, 'size': size, 'rc': rc, 'msg': msg.strip()[-600:]}
        if rc not in (0, 1):
            res['problems'].append(f'lower --target {preset} {extra} exited {rc}: {msg[-300:]}')
        if rc == 0 and os.path.exists(o):
            e['changed'] = not same_bytes(o, spv)
            if e['changed']:
                vrc, vout = run(['spirv-val', '--target-env', env, o])
                if vrc != 0:
                    res['problems'].append(f'{preset} {extra}: spirv-val rejects the output: {vout[-300:]}')
                vrc, vout = run([args.bin, 'validate', '--target-env', env, '--target', preset, '-q', o])
                if vrc != 0:
                    res['problems'].append(f'{preset} {extra}: our validator rejects the output: {vout[-300:]}')
                again = o + '.again.spv'
                arc, _ = run([args.bin, 'lower', o, '-o', again, '--target', preset, '-q'] + extra)
                if arc != 0 or not same_bytes(again, o):
                    res['problems'].append(f'{preset} {extra}: lowering the output again changes it (exit {arc})')
                if os.path.exists(again):
                    os.remove(again)
            os.remove(o)
        res['lower'].append(e)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--glslang', help="glslang's Test/ folder")
    ap.add_argument('--spvasm', action='append', default=[], help='a folder of .spvasm files')
    ap.add_argument('--bin', default='target/release/spv-subgroup')
    ap.add_argument('--work', default='/tmp/corpus-work')
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    for d in ('spv', 'out'):
        os.makedirs(os.path.join(args.work, d), exist_ok=True)
    with cf.ThreadPoolExecutor(args.jobs) as ex:
        jobs = []
        if args.glslang:
            names = sorted(n for n in os.listdir(args.glslang) if n.rsplit('.', 1)[-1] in STAGES)
            jobs += [ex.submit(compile_glsl, args, n) for n in names]
        for d in args.spvasm:
            jobs += [ex.submit(assemble, args, os.path.join(d, n))
                     for n in sorted(os.listdir(d)) if n.endswith('.spvasm')]
        built = [j.result() for j in jobs]
        modules = [b for b in built if b[1]]
        results = list(ex.map(lambda m: sweep_one(args, m), modules))
    with open(os.path.join(args.work, 'results.json'), 'w') as f:
        json.dump(results, f, indent=1)
    print(f'{len(built)} sources, {len(modules)} compiled or assembled '
          f'({collections.Counter(m[2] for m in modules)})\n')
    # The naga column: `lower --target naga` runs naga 30's front end, validator and WGSL writer
    # on every output (SG0704 names naga's refusal), so an exit 0 is an output naga accepted, a
    # refusal naming SG0704 one naga refused (blamed on the input), and an exit 3 one it refused
    # for our sequences.
    print('| preset | size | lowered | unchanged | refused | of which naga refused (SG0704) |')
    print('|---|---|---|---|---|---|')
    rows = collections.OrderedDict()
    for r in results:
        for e in r['lower']:
            row = rows.setdefault((e['preset'], e['size']), collections.Counter())
            row['lowered' if e.get('changed') else 'unchanged' if e['rc'] == 0 else 'refused'] += 1
            if e['rc'] != 0 and 'SG0704' in e['msg'] and 'naga' in e['msg']:
                row['naga'] += 1
    for (preset, size), c in rows.items():
        naga = c['naga'] if preset == 'naga' else '-'
        print(f"| {preset} | {size or 'any'} | {c['lowered']} | {c['unchanged']} | {c['refused']} | {naga} |")
    reasons = collections.Counter()
    for r in results:
        for e in r['lower']:
            if e['rc'] == 1 and e['size'] is None:
                msg = e['msg']
                key = ('SPIR-V version' if 'consumes' in msg and 'SPIR-V 1.' in msg
                       else 'extended types' if 'extended types' in msg
                       else 'Volatile (SG0610)' if 'SG0610' in msg
                       else msg.split(':', 2)[-1].strip()[:120])
                reasons[(e['preset'], key)] += 1
    print('\nRefusals (no size given), by reason:\n')
    for (preset, key), n in sorted(reasons.items()):
        print(f'- {preset}: {n} x {key}')
    only = [r for r in results if r.get('validate_only')]
    print(f'\nModules our validator rejects and spirv-val accepts: {len(only)}')
    for r in only:
        first = next((l for l in r['validate_only'].splitlines() if 'error[' in l), '')
        print(f"- {r['name']} ({r['env']}): {first.strip()}")
    problems = [(r['name'], p) for r in results for p in r['problems']]
    print(f'\nProblems (crashes, internal errors, outputs failing a check): {len(problems)}')
    for name, p in problems:
        print(f'- {name}: {p}')
    sys.exit(1 if problems else 0)


if __name__ == '__main__':
    main()
