#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""net.egress.closed: the egress services (core/net/egress) in a closed
topology of network namespaces, no engine.

  <p>i  the test internet (198.18.0.0/15 on its loopback): dnsmasq with
        static records, HTTP/HTTPS (test CA), echo, SOCKS5
        (egress_servers.py). No other link: nothing can leave.
  <p>e  the "engine": egress_run (asbn_egress) and the nft redirects a
        datapath would install; its only uplink is a veth to <p>i, IPv4
        forwarding off (only what the services carry gets through).
  <p>s  the "sandbox" 10.231.0.2: curl and egress_client.py.

Every process, netns and file it made is removed on every exit path.
usage: test_egress.py EGRESS_RUN
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import json

HERE = os.path.dirname(os.path.abspath(__file__))
RUN = sys.argv[1] if len(sys.argv) > 1 else None  # bench/egress_bench.py sets it
TAG = f'ae{os.getpid() % 100000}'
NS_I, NS_E, NS_S = f'{TAG}i', f'{TAG}e', f'{TAG}s'
SBX = '10.231.0.2'
SBX6 = 'fd88::2'
NAMES = {'example.test': '198.18.0.10', 'other.test': '198.18.0.11',
         'a.wild.test': '198.18.0.12', 'evil.test': '198.18.0.10'}
SUSER, SPASS = 'tuser', 'tpass-1'

procs, fails, checks = [], [], [0]
tmp = tempfile.mkdtemp(prefix='net-egress-')


def sh(*cmd, ns=None, check=True, timeout=60, **kw):
    if ns:
        cmd = ('ip', 'netns', 'exec', ns) + cmd
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise RuntimeError(f'{cmd}: {r.returncode} {r.stderr.strip()}')
    return r


def cleanup():
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    for ns in (NS_S, NS_E, NS_I):
        subprocess.run(['ip', 'netns', 'del', ns], capture_output=True)
    shutil.rmtree(f'/etc/netns/{NS_S}', ignore_errors=True)
    try:
        os.rmdir('/etc/netns')  # only if this test made it and nothing else uses it
    except OSError:
        pass
    shutil.rmtree(tmp, ignore_errors=True)


def check(what, ok, detail=''):
    checks[0] += 1
    print(('ok   ' if ok else 'FAIL ') + what + ('' if ok else f'   [{detail}]'), flush=True)
    if not ok:
        fails.append(what)


def wait_for(cond, what, deadline=60):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    raise RuntimeError(f'timed out waiting for {what}')


def topology():
    for ns in (NS_I, NS_E, NS_S):
        sh('ip', 'netns', 'add', ns)
        sh('ip', 'link', 'set', 'lo', 'up', ns=ns)
    sh('ip', 'link', 'add', f'{TAG}ie', 'netns', NS_I, 'type', 'veth', 'peer', 'name', f'{TAG}ei',
       'netns', NS_E)
    sh('ip', 'link', 'add', f'{TAG}es', 'netns', NS_E, 'type', 'veth', 'peer', 'name', f'{TAG}se',
       'netns', NS_S)
    for a in ['198.18.0.1'] + sorted(set(NAMES.values())) + ['198.18.0.20', '198.18.0.53']:
        sh('ip', 'addr', 'add', a + '/32', 'dev', 'lo', ns=NS_I)
    sh('ip', 'addr', 'add', '198.18.255.1/30', 'dev', f'{TAG}ie', ns=NS_I)
    sh('ip', 'link', 'set', f'{TAG}ie', 'up', ns=NS_I)
    sh('ip', 'addr', 'add', '198.18.255.2/30', 'dev', f'{TAG}ei', ns=NS_E)
    sh('ip', 'link', 'set', f'{TAG}ei', 'up', ns=NS_E)
    sh('ip', 'route', 'add', 'default', 'via', '198.18.255.1', ns=NS_E)
    sh('ip', 'addr', 'add', '10.231.0.1/30', 'dev', f'{TAG}es', ns=NS_E)
    sh('ip', 'link', 'set', f'{TAG}es', 'up', ns=NS_E)
    sh('sysctl', '-qw', 'net.ipv4.ip_forward=0', ns=NS_E)
    sh('sysctl', '-qw', 'net.ipv6.conf.all.forwarding=0', ns=NS_E)
    # IPv6: the test internet on 2001:2::/48 (RFC 5180's benchmarking
    # range), the sandbox link on a ULA.
    for a in ('2001:2::10', '2001:2::20'):
        sh('ip', '-6', 'addr', 'add', a + '/128', 'dev', 'lo', ns=NS_I)
    sh('ip', '-6', 'addr', 'add', '2001:2:ff::1/64', 'dev', f'{TAG}ie', 'nodad', ns=NS_I)
    sh('ip', '-6', 'addr', 'add', '2001:2:ff::2/64', 'dev', f'{TAG}ei', 'nodad', ns=NS_E)
    sh('ip', '-6', 'route', 'add', 'default', 'via', '2001:2:ff::1', ns=NS_E)
    sh('ip', '-6', 'addr', 'add', 'fd88::1/64', 'dev', f'{TAG}es', 'nodad', ns=NS_E)
    sh('ip', 'addr', 'add', SBX + '/30', 'dev', f'{TAG}se', ns=NS_S)
    sh('ip', 'link', 'set', f'{TAG}se', 'up', ns=NS_S)
    sh('ip', 'route', 'add', 'default', 'via', '10.231.0.1', ns=NS_S)
    sh('ip', '-6', 'addr', 'add', SBX6 + '/64', 'dev', f'{TAG}se', 'nodad', ns=NS_S)
    sh('ip', '-6', 'route', 'add', 'default', 'via', 'fd88::1', ns=NS_S)
    os.makedirs(f'/etc/netns/{NS_S}', exist_ok=True)
    with open(f'/etc/netns/{NS_S}/resolv.conf', 'w') as f:
        f.write('nameserver 198.18.0.53\noptions attempts:1 timeout:5\n')


def certs():
    o = lambda *a: sh('openssl', *a)
    o('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '2',
      '-subj', '/CN=net.egress test CA', '-keyout', f'{tmp}/ca.key', '-out', f'{tmp}/ca.pem',
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign')
    o('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj',
      '/CN=example.test', '-keyout', f'{tmp}/srv.key', '-out', f'{tmp}/srv.csr')
    with open(f'{tmp}/ext', 'w') as f:
        f.write('subjectAltName=DNS:example.test,DNS:other.test,DNS:evil.test,DNS:*.wild.test,'
                'IP:198.18.0.20\n')
    o('x509', '-req', '-in', f'{tmp}/srv.csr', '-CA', f'{tmp}/ca.pem', '-CAkey', f'{tmp}/ca.key',
      '-CAcreateserial', '-days', '2', '-extfile', f'{tmp}/ext', '-out', f'{tmp}/srv.pem')


def start(ns, *cmd, **kw):
    p = subprocess.Popen(('ip', 'netns', 'exec', ns) + cmd, **kw)
    procs.append(p)
    return p


class Egress:
    def __init__(self):
        os.mkdir(f'{tmp}/state', 0o700)
        self.p = start(NS_E, RUN, '--dns-upstream', '198.18.0.53', '--bind', '0.0.0.0', '--bind6', '::',
                       '--peek-timeout', '5', '--state-dir', f'{tmp}/state', '--upstream-ca',
                       f'{tmp}/ca.pem', stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                       text=True)
        line = self.p.stdout.readline().split()
        if not line or line[0] != 'ready':
            raise RuntimeError(f'egress_run did not start: {line}')
        kv = dict(x.split('=', 1) for x in line[1:])
        self.dns, self.proxy, self.ca = int(kv['dns']), int(kv['proxy']), kv['ca']

    def cmd(self, line):
        self.p.stdin.write(line + '\n')
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def set(self, *args):
        r = self.cmd(' '.join(('set', SBX) + args))
        if r != 'ok':
            raise RuntimeError(f'set {args}: {r}')

    def counters(self):
        r = self.cmd('counters ' + SBX).split()
        return {k: int(v) for k, v in (x.split('=') for x in r[1:])}


def nft(eg):
    """The redirects and input filter a datapath installs (docs/egress.md)."""
    def table(family, extra_in):
        return f'''table {family} aegtest {{
  chain pre {{
    type nat hook prerouting priority dstnat; policy accept;
    iifname "{TAG}es" udp dport 53 redirect to :{eg.dns}
    iifname "{TAG}es" tcp dport 53 redirect to :{eg.dns}
    iifname "{TAG}es" meta l4proto tcp redirect to :{eg.proxy}
  }}
  chain in {{
    type filter hook input priority filter; policy accept;{extra_in}
    iifname "{TAG}es" udp dport {eg.dns} accept
    iifname "{TAG}es" tcp dport {{ {eg.dns}, {eg.proxy} }} accept
    iifname "{TAG}es" drop
  }}
}}
'''
    with open(f'{tmp}/rules.nft', 'w') as f:
        f.write(table('ip', '') + table('ip6', '\n    iifname "' + TAG + 'es" meta l4proto ipv6-icmp accept'))
    sh('nft', '-f', f'{tmp}/rules.nft', ns=NS_E)


def curl(*args, **kw):
    r = sh('curl', '-sS', '--max-time', '30', '--noproxy', '*', *args, ns=NS_S, check=False,
           timeout=60, **kw)
    return r.returncode, r.stdout, r.stderr.strip()


def client(*args, **kw):
    return sh('/usr/bin/python3', f'{HERE}/egress_client.py', *args, ns=NS_S, check=False,
              timeout=90, **kw)


def got_json(r):
    try:
        return json.loads(r[1])
    except ValueError:
        return None


def main():
    if os.geteuid() != 0:
        print('net.egress.closed: needs root')
        return 1
    for tool in ('ip', 'nft', 'dnsmasq', 'curl', 'openssl'):
        if not shutil.which(tool):
            print(f'net.egress.closed: {tool} missing (scripts/deps.sh)')
            return 1
    topology()
    certs()
    start(NS_I, 'dnsmasq', '--keep-in-foreground', '--no-resolv', '--no-hosts', '--bind-interfaces',
          '--listen-address=198.18.0.53', '--port=53', '--user=root', f'--pid-file={tmp}/dnsmasq.pid',
          *[f'--address=/{n}/{a}' for n, a in NAMES.items()],
          '--address=/wild.test/198.18.0.12', '--address=/v6.test/2001:2::10',
          stderr=subprocess.DEVNULL)
    start(NS_I, '/usr/bin/python3', f'{HERE}/egress_servers.py', tmp, f'{tmp}/srv.pem',
          f'{tmp}/srv.key', SUSER, SPASS, *[f'{n}={a}' for n, a in NAMES.items()])
    wait_for(lambda: os.path.exists(f'{tmp}/servers.ready'), 'the test servers')
    eg = Egress()
    nft(eg)
    ca = ('--cacert', f'{tmp}/ca.pem')

    # 1. Internet off, allowOut: a domain, a wildcard, one IP.
    eg.set('internet=0', 'allow=example.test', 'allow=*.wild.test', 'allow=198.18.0.20')
    r = curl('http://example.test/')
    j = got_json(r)
    check('allowed domain over HTTP', r[0] == 0 and j and j['host'] == 'example.test', r)
    r = curl(*ca, 'https://example.test/')
    j = got_json(r)
    check('allowed domain over HTTPS, spliced: the server\'s own certificate verifies against the '
          'test CA', r[0] == 0 and j and j['local'] == '198.18.0.10', r)
    r = curl(*ca, 'https://a.wild.test/')
    check('wildcard *.wild.test allows a.wild.test', r[0] == 0 and got_json(r), r)
    r = curl('http://wild.test/')
    check('the wildcard does not allow its apex (resolver refuses wild.test)', r[0] == 6, r)
    r = curl('http://other.test/')
    check('a name no allowance names is not resolved', r[0] == 6, r)
    r = curl('http://198.18.0.20/')
    check('allowOut IP reachable by raw IP', r[0] == 0 and got_json(r), r)
    r = curl('http://198.18.0.10/')
    check('raw-IP connection to a domain-only allowance refused', r[0] != 0, r)
    r = curl('--resolve', 'evil.test:443:198.18.0.10', '-k', 'https://evil.test/')
    check('SNI mismatch: another name on the allowed name\'s address refused', r[0] != 0, r)
    r = curl('--resolve', 'example.test:443:198.18.0.11', *ca, 'https://example.test/')
    check('SNI mismatch: the allowed name on an address not given for it refused', r[0] != 0, r)
    r = curl('-H', 'Host: evil.test', 'http://example.test/')
    check('Host mismatch: another Host on the allowed name\'s address refused', r[0] != 0, r)
    r = curl('--resolve', 'example.test:80:198.18.0.11', 'http://example.test/')
    check('Host mismatch: the allowed Host on an address not given for it refused', r[0] != 0, r)
    r = client('dns-tcp', 'example.test', '198.18.0.53')
    check('DNS over TCP answers an allowed name', 'rcode=0 ' in r.stdout and
          'addrs=198.18.0.10' in r.stdout, (r.stdout, r.stderr))
    r = client('dns-tcp', 'other.test', '198.18.0.53')
    check('DNS over TCP refuses a name no allowance names', 'rcode=5 ' in r.stdout,
          (r.stdout, r.stderr))
    # RFC 6761: localhost names are loopback, answered by the resolver
    # itself (nothing asked upstream: dnsmasq has no such record), also with
    # the internet off; other types get no records, the name exists
    for qtype, want in (('A', 'addrs=127.0.0.1'), ('AAAA', 'addrs=::1'), ('TXT', 'addrs=')):
        r = client('dns-tcp', '8080-abcdefghij0123456789.LocalHost', '198.18.0.53', qtype)
        check(f'a *.localhost name ({qtype}) is loopback with the internet off',
              'rcode=0 ' in r.stdout and r.stdout.strip().endswith(want), (r.stdout, r.stderr))
    r = client('dns-tcp', 'localhost', '198.18.0.53', 'AAAA')
    check('localhost itself is loopback', r.stdout.strip().endswith('addrs=::1'),
          (r.stdout, r.stderr))
    r = client('dns-tcp', 'localhost.test', '198.18.0.53')
    check('a name only starting with localhost is not', 'rcode=5 ' in r.stdout,
          (r.stdout, r.stderr))
    r = client('halfclose', '198.18.0.20', '7', str(3 * 1024 * 1024))
    check('3 MiB through the splice relay, half-close passed on, reply after EOF',
          r.stdout.strip() == 'ok', (r.stdout, r.stderr))
    c = eg.counters()
    check('counters: allowed, refused, bytes, DNS answered and refused',
          c['allowed'] >= 5 and c['refused'] >= 5 and c['out'] >= 3 * 1024 * 1024 and
          c['in'] > 0 and c['dns_answered'] >= 4 and c['dns_refused'] >= 3 and c['open'] == 0, c)

    # 1b. IPv6: the sandbox's second address, the AAAA answer to a query
    #     made over IPv4 opening the IPv6 connection.
    eg.set('internet=0', 'allow=v6.test', 'allow=example.test')
    check('the sandbox\'s IPv6 address joins it', eg.cmd(f'alias {SBX} {SBX6}') == 'ok')
    before = eg.counters()
    r = curl('-6', 'http://v6.test/')
    j = got_json(r)
    check('IPv6: an allowed domain over the proxy (IP6T_SO_ORIGINAL_DST)',
          r[0] == 0 and j and j['local'] == '2001:2::10' and j['host'] == 'v6.test', r)
    r = curl('-6', 'http://[2001:2::20]/')
    check('IPv6: a raw-IP connection refused', r[0] != 0, r)
    c = eg.counters()
    check('IPv6: one sandbox, one set of counters',
          c['allowed'] == before['allowed'] + 1 and c['refused'] == before['refused'] + 1, c)

    # 2. Internet on with denyOut: allow beats deny; the rest of the world open.
    eg.set('internet=1', 'deny=198.18.0.0/15', 'allow=example.test')
    r = curl('http://example.test/')
    check('denyOut 198.18/15 with allowOut example.test: the domain still works',
          r[0] == 0 and got_json(r), r)
    r = curl('http://other.test/')
    check('denyOut refuses other.test (resolved: internet on)', r[0] != 0 and r[0] != 6, r)
    eg.set('internet=1')
    r = curl('http://other.test/')
    check('live update: the deny lifted, other.test reachable', r[0] == 0 and got_json(r), r)
    r = curl('http://10.231.0.1/')
    check('the engine\'s own address is never reached through the proxy', r[0] != 0, r)

    # 3. SOCKS5 upstream: domain flows by name (ATYP 3), CIDR flows by address.
    eg.set('internet=0', 'allow=example.test', 'allow=198.18.0.20', 'socks=198.18.0.1:1080',
           f'user={SUSER}', f'pass={SPASS}')
    r = curl('http://example.test/socks')
    r2 = curl(*ca, 'https://example.test/socks-tls')
    r3 = curl('http://198.18.0.20/socks-ip')
    log = open(f'{tmp}/socks.log').read() if os.path.exists(f'{tmp}/socks.log') else ''
    check('SOCKS5 upstream carries a domain flow by name (HTTP)', r[0] == 0 and
          'CONNECT atyp=3 host=example.test port=80 user=tuser' in log, (r, log))
    check('SOCKS5 upstream carries a domain flow by name (TLS)', r2[0] == 0 and
          'CONNECT atyp=3 host=example.test port=443' in log, (r2, log))
    check('SOCKS5 upstream carries an allowOut IP flow by address', r3[0] == 0 and
          'CONNECT atyp=1 host=198.18.0.20 port=80' in log, (r3, log))
    eg.set('internet=0', 'allow=example.test', 'socks=198.18.0.1:1080', f'user={SUSER}',
           'pass=wrong')
    r = curl('http://example.test/')
    check('SOCKS5 upstream refusing our credentials: the connection fails, no bypass',
          r[0] != 0, r)

    # 4. Header rules and secrets: injected at egress over HTTP and HTTPS
    #    (intercepted for example.test, which has rules, only).
    secret = 's3cr3t-VALUE-42'
    check('secret stored', eg.cmd(f'secret tok {secret}') == 'ok')
    st = os.stat(f'{tmp}/state/secrets.json')
    check('the secrets store is 0600', st.st_mode & 0o777 == 0o600, oct(st.st_mode))
    st = os.stat(eg.ca.replace('.pem', '.key'))
    check('the egress CA key is 0600', st.st_mode & 0o777 == 0o600, oct(st.st_mode))
    eg.set('internet=0', 'allow=example.test', 'allow=other.test',
           'rule=example.test|Authorization|Bearer%20${e2b.secrets.tok}',
           'rule=example.test|X-Plain|plain-value')

    def served(path):
        for line in open(f'{tmp}/requests.log'):
            j = json.loads(line)
            if j['path'] == path:
                return j
        return None

    r = curl('-v', '-H', 'Authorization: placeholder-from-sandbox', 'http://example.test/hdr')
    s = served('/hdr')
    check('HTTP: the rule\'s header reaches the server with the secret substituted',
          r[0] == 0 and s and s['headers'].get('authorization') == f'Bearer {secret}' and
          s['headers'].get('x-plain') == 'plain-value', (r, s))
    check('HTTP: the secret is absent from all the sandbox side sees',
          r[0] == 0 and secret not in r[1] and secret not in r[2], r)
    r = curl('-v', '--cacert', eg.ca, 'https://example.test/hdr-tls')
    s = served('/hdr-tls')
    check('HTTPS to a domain with rules: intercepted (the egress CA verifies), the secret '
          'reaches the server', r[0] == 0 and s and
          s['headers'].get('authorization') == f'Bearer {secret}', (r, s))
    check('HTTPS: the secret is absent from all the sandbox side sees',
          r[0] == 0 and secret not in r[1] and secret not in r[2], r)
    check('HTTPS: the leaf the sandbox sees is the egress CA\'s',
          'agent-sandbox egress CA' in r[2], r[2][-2000:])
    r = curl(*ca, 'https://other.test/norules')
    r2 = curl('--cacert', eg.ca, 'https://other.test/norules2')
    check('a domain without rules is not intercepted: the server\'s own certificate',
          r[0] == 0 and r2[0] == 60, (r, r2))
    r = client('hostswitch', '198.18.0.10', 'example.test', 'other.test')
    check('keep-alive cannot switch Host on a domain-allowed connection',
          r.stdout.startswith('HTTP/1.1 200') and '| HTTP/1.1 421' in r.stdout,
          (r.stdout, r.stderr))
    r = curl('-H', 'Transfer-Encoding: chunked', '-H', 'Content-Length: 5', '-d', 'hello',
             'http://example.test/smuggle')
    check('ambiguous framing (Transfer-Encoding with Content-Length) refused',
          r[0] == 0 and 'ambiguous' in r[1] and served('/smuggle') is None, r)
    r = curl('-T', '-', '-H', 'Transfer-Encoding: chunked', 'http://example.test/chunked',
             input='x' * 100000)
    s = served('/chunked')
    check('a chunked request body passes whole', r[0] == 0 and s and s['body_len'] == 100000,
          (r, s))
    eg.set('internet=0', 'allow=other.test', 'rule=other.test|X-K|${e2b.secrets.nope}')
    r = curl('-w', '%{http_code}', '-o', '/dev/null', 'http://other.test/unknown-secret')
    check('a rule naming an unknown secret: 502, nothing sent', r[1] == '502' and
          served('/unknown-secret') is None, r)

    # 5. Connection cap: 3 held, cap 2 -> one refused.
    eg.set('internet=0', 'allow=198.18.0.20', 'maxconn=2')
    before = eg.counters()
    h = start(NS_S, '/usr/bin/python3', f'{HERE}/egress_client.py', 'hold', '198.18.0.20', '7', '3',
              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    h.stdout.readline()
    wait_for(lambda: (lambda c: c['open'] == 2 and c['refused'] == before['refused'] + 1)(
        eg.counters()), 'two connections open and one refused', 60)
    check('connection cap: 2 open, the third refused', True)
    h.stdin.close()
    h.wait(timeout=60)
    wait_for(lambda: eg.counters()['open'] == 0, 'the held connections to close', 60)
    # 6. A live update cuts the open connections the new policy refuses.
    eg.set('internet=0', 'allow=198.18.0.20', 'allow=example.test')
    h = start(NS_S, '/usr/bin/python3', f'{HERE}/egress_client.py', 'hold', '198.18.0.20', '7', '1',
              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    h.stdout.readline()
    wait_for(lambda: eg.counters()['open'] == 1, 'the held connection to open', 60)
    eg.set('internet=0', 'allow=example.test')
    wait_for(lambda: eg.counters()['open'] == 0, 'the live update to cut it', 60)
    check('live update: an open connection the new policy refuses is cut', True)
    h.stdin.close()
    h.wait(timeout=60)
    check('forget drops the sandbox', eg.cmd('forget ' + SBX) == 'ok')
    r = curl('http://198.18.0.20/')
    check('a forgotten sandbox is refused', r[0] != 0, r)
    eg.p.stdin.close()
    check('egress stops cleanly', eg.p.wait(timeout=60) == 0)
    print(f'net.egress.closed: {checks[0] - len(fails)}/{checks[0]} checks passed')
    return 1 if fails else 0


if __name__ == '__main__':
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(1))
    try:
        rc = main()
    except Exception as e:  # noqa: BLE001 - a setup failure fails the test
        print(f'net.egress.closed: error: {e}')
        rc = 1
    finally:
        cleanup()
    sys.exit(rc)
