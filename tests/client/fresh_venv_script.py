"""Run by test_fresh_venv.py under Python 3.9, in a virtualenv holding nothing but
`pip install ./clients/python`: upload, list, download and verify a real webhook delivery.

Standard library and storage_client only. Prints one JSON object with what it saw.
"""

import hashlib
import io
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

from storage_client import Client
from storage_client.webhooks import verify

received = []


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        received.append((body, self.headers["SERVICE-Signature"]))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    server = HTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    data = os.urandom(100_000)

    with Client() as client:  # STORAGE_API_KEY and STORAGE_BASE_URL
        webhook, secret = client.webhooks.create(
            f"http://127.0.0.1:{server.server_address[1]}/hook", events=["file.uploaded"]
        )
        file = client.files.upload(io.BytesIO(data), filename="fresh.bin", path="py39")
        listed = [f.id for f in client.files.list(path="py39")]
        out = io.BytesIO()
        client.files.download(file.id, out)

        deadline = time.monotonic() + 30
        while not received and time.monotonic() < deadline:
            time.sleep(0.1)
        body, header = received[0]
        event = verify(body, header, secret)

    print(
        json.dumps(
            {
                "python": list(sys.version_info[:2]),
                "fileId": file.id,
                "status": file.status,
                "listed": listed,
                "downloadedSha256": hashlib.sha256(out.getvalue()).hexdigest(),
                "uploadedSha256": hashlib.sha256(data).hexdigest(),
                "eventType": event["type"],
                "eventFileId": event["data"]["fileId"],
                "webhookId": webhook.id,
            }
        )
    )


if __name__ == "__main__":
    main()
