# Served by the template's start command on port 8000 (copied in by the build).
import http.server, os

class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = (os.environ.get("GREETING", "hello") + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

http.server.HTTPServer(("127.0.0.1", 8000), H).serve_forever()
