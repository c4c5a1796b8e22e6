"""One sandbox opening another's URL (docs/networking.md, "Sandbox to
sandbox"): sandbox A serves a file on port 8080; sandbox B's Python
(urllib, glibc's resolver: *.localhost is B's own loopback, where the
engine's portal listens on 127.0.0.1 and ::1) fetches A's URL, over http
(get_url) and https (the engine's CA is in every sandbox's trust store).
Works with and without the engine's --no-network.
SPDX-License-Identifier: Apache-2.0"""
import asyncio

from agent_sandbox import Sandbox

FETCH = """python3 -c "
import socket, sys, urllib.request
host = sys.argv[1].split('/')[2].split(':')[0]
print('resolves to', sorted({a[4][0] for a in socket.getaddrinfo(host, None)}))
for url in sys.argv[1:]:
    print(url.split(':')[0], urllib.request.urlopen(url, timeout=30).read().decode().strip())
" """


async def main():
    async with await Sandbox.create(timeout=120) as a, await Sandbox.create(timeout=120) as b:
        await a.files.write("/home/user/www/hello.txt", "hello from sandbox A\n")
        await a.commands.run("python3 -m http.server 8080", cwd="/home/user/www",
                             background=True)
        await a.commands.run("timeout 30 sh -c 'until curl -sf -o /dev/null "
                             "http://127.0.0.1:8080/hello.txt; do sleep 0.1; done'")
        http = a.get_url(8080) + "/hello.txt"             # http://8080-<A>.localhost:<port>
        https = f"https://{a.get_host(8080)}/hello.txt"
        print("A serves", http)
        r = await b.commands.run(f"{FETCH} {http} {https}")
        print(r.stdout, end="")


asyncio.run(main())
