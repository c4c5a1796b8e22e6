#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The egress proxy's cost, side by side in one run, in the closed
topology of net.egress.closed (tests/net/test_egress.py): a "sandbox"
netns whose TCP is redirected to the proxy, and the "engine" netns going
to the same test servers directly (the host's view).

  throughput: MiB/s of a bulk upload to the sink server, spliced by the
              proxy (allowOut CIDR) vs direct; median of runs
  latency:    new connection + one HTTP GET, ms p50/p90/p99: spliced
              (allowOut CIDR), request-relayed (allowOut domain: Host
              checked per request) and direct

usage: sudo bench/egress_bench.py build/tests/net/egress_run [MiB] [N]
"""
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'tests', 'net'))
import test_egress as T  # noqa: E402

MIB = int(sys.argv[2]) if len(sys.argv) > 2 else 512
N = int(sys.argv[3]) if len(sys.argv) > 3 else 300
T.RUN = sys.argv[1]
CLIENT = os.path.join(HERE, '..', 'tests', 'net', 'egress_client.py')


def run(ns, *args):
    return T.sh('/usr/bin/python3', CLIENT, *args, ns=ns, timeout=600).stdout.split()


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def main():
    T.topology()
    T.certs()
    T.start(T.NS_I, 'dnsmasq', '--keep-in-foreground', '--no-resolv', '--no-hosts',
            '--bind-interfaces', '--listen-address=198.18.0.53', '--port=53', '--user=root',
            *[f'--address=/{n}/{a}' for n, a in T.NAMES.items()], stderr=T.subprocess.DEVNULL)
    T.start(T.NS_I, '/usr/bin/python3', f'{T.HERE}/egress_servers.py', T.tmp, f'{T.tmp}/srv.pem',
            f'{T.tmp}/srv.key', T.SUSER, T.SPASS, *[f'{n}={a}' for n, a in T.NAMES.items()])
    T.wait_for(lambda: os.path.exists(f'{T.tmp}/servers.ready'), 'the test servers')
    eg = T.Egress()
    T.nft(eg)
    eg.set('internet=0', 'allow=example.test', 'allow=198.18.0.20')
    T.curl('http://example.test/')  # the resolver's answer for example.test
    tput = {'proxy': [], 'direct': []}
    for _ in range(5):  # interleaved, so load on the machine hits both alike
        for kind, ns in (('proxy', T.NS_S), ('direct', T.NS_E)):
            got, secs = run(ns, 'sink', '198.18.0.20', '9', str(MIB))
            assert int(got) == MIB << 20, got
            tput[kind].append(MIB / float(secs))
    lat = {}
    for kind, ns, addr, host in (('spliced', T.NS_S, '198.18.0.20', '198.18.0.20'),
                                 ('relayed', T.NS_S, '198.18.0.10', 'example.test'),
                                 ('direct', T.NS_E, '198.18.0.10', 'example.test')):
        lat[kind] = [float(x) for x in run(ns, 'latency', addr, '80', str(N), host)]
    tp, td = statistics.median(tput['proxy']), statistics.median(tput['direct'])
    print(f'throughput MiB/s (median of 5 x {MIB} MiB): proxy {tp:.0f}  direct {td:.0f}  '
          f'ratio {tp / td:.2f}')
    for kind, v in lat.items():
        print(f'latency ms ({N} x connect+GET) {kind:8s} p50 {pct(v, 50):.3f}  '
              f'p90 {pct(v, 90):.3f}  p99 {pct(v, 99):.3f}')
    d50 = pct(lat['direct'], 50)
    print(f'latency p50 ratio: spliced {pct(lat["spliced"], 50) / d50:.2f}  '
          f'relayed {pct(lat["relayed"], 50) / d50:.2f}')
    eg.p.stdin.close()
    eg.p.wait(timeout=60)


if __name__ == '__main__':
    try:
        main()
    finally:
        T.cleanup()
